"""What the small HTTP servers (console, metrics, control API) share."""
