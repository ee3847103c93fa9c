"""Authentication failures, as Kafka's SaslServerAuthenticator reports them to the client."""
from __future__ import annotations


class SaslFailure(Exception):
    """Authentication failed. ``client_message`` is what the SaslAuthenticate response says (Kafka's wording);
    ``str(exc)`` is the detail for the broker log (never a password or token)."""

    def __init__(self, detail: str, client_message: str | None = None) -> None:
        super().__init__(detail)
        self.client_message = client_message if client_message is not None else detail


def invalid_credentials(mechanism: str, detail: str, reauth: bool = False) -> SaslFailure:
    """Kafka turns a mechanism's SaslException into this message: it must not tell whether the user exists."""
    what = "re-authentication" if reauth else "authentication"
    return SaslFailure(detail, f"Authentication failed during {what} due to invalid credentials with SASL "
                               f"mechanism {mechanism}")
