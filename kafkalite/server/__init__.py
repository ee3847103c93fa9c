"""The network: listeners, connections, frames, dispatch to handlers, graceful drain."""
