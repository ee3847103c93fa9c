"""Kafka's principal: a type and a name, written ``User:alice``.

Kafka's ``KafkaPrincipal`` compares by type and name; ACLs name principals in that string form, and
``User:*`` in an ACL matches every user principal. A connection starts as ``User:ANONYMOUS`` (PLAINTEXT,
or SSL without a client certificate) and becomes the SASL-authenticated user or the principal mapped from a
client certificate's subject.
"""
from __future__ import annotations

from dataclasses import dataclass, field

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    # authenticated with a delegation token (SCRAM tokenauth=true): Kafka's tokenAuthenticated, and the token's id;
    # neither takes part in equality (Kafka's KafkaPrincipal.equals compares type and name)
    token_id: str | None = field(default=None, compare=False)

    @property
    def token_authenticated(self) -> bool:
        return self.token_id is not None

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``"User:alice"`` -> KafkaPrincipal("User", "alice"); the name may itself contain ':'."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"expected a principal as <type>:<name>, got {text!r}")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
