"""Who may call the schema registry, and what they may do.

**Authentication** (``kafkalite.schema.registry.authentication.method``: ``NONE``, the default, or ``BASIC``):
HTTP Basic credentials are checked against the broker's own SASL users: the PLAIN users of any SASL listener's
``PlainLoginModule`` JAAS entry, and the SCRAM-SHA-256/512 credentials kept by the broker (``kafkalite scram``,
AlterUserScramCredentials) -- the password is salted and hashed with the stored salt and iterations and compared
with the stored key, as a SCRAM exchange would. The principal is ``User:<name>``; a missing or wrong credential
is HTTP 401 (error_code 401, ``WWW-Authenticate: Basic``). Successful checks are cached (a SCRAM check costs a
PBKDF2), keyed by the credential they matched, so a changed or deleted credential is checked afresh. Without
authentication the principal is ``User:ANONYMOUS``, as on a PLAINTEXT Kafka listener.

**Authorization**, when the broker's authorizer is on (``authorizer.class.name``): Confluent's schema registry
operations are mapped onto Kafka ACLs, so one set of ACLs (``kafkalite acls``, kafka-acls.sh, any admin client)
governs a topic and its schemas:

=============================  ====================================  =====================================
Confluent operation            REST calls                            Kafka ACL checked
=============================  ====================================  =====================================
SUBJECT_READ                   GET versions, a version, lookup,      READ on the subject's TOPIC
                               referencedby
SUBJECT_WRITE                  register, compatibility check         WRITE on the subject's TOPIC
SUBJECT_DELETE                 delete a subject or a version         DELETE on the subject's TOPIC
SUBJECT_COMPATIBILITY_READ     GET /config/{s}, GET /mode/{s}        DESCRIBE_CONFIGS on the subject's TOPIC
SUBJECT_COMPATIBILITY_WRITE    PUT/DELETE /config/{s}, /mode/{s}     ALTER_CONFIGS on the subject's TOPIC
GLOBAL_COMPATIBILITY_READ      GET /config, GET /mode                DESCRIBE_CONFIGS on the CLUSTER
GLOBAL_COMPATIBILITY_WRITE     PUT/DELETE /config, /mode             ALTER_CONFIGS on the CLUSTER
GLOBAL_READ                    GET /subjects, GET /schemas           listed: the subjects the principal may
                                                                     DESCRIBE (READ/WRITE imply it)
SCHEMA_READ                    GET /schemas/ids/{id}[/...]           READ on any subject holding the id
=============================  ====================================  =====================================

A subject's TOPIC resource is the topic it belongs to under the TopicNameStrategy every serializer uses by
default: the subject without its ``-key`` or ``-value`` suffix (``orders-value`` -> topic ``orders``), so a
producer allowed to WRITE a topic may register its schemas and a consumer allowed to READ it may fetch them. Any
other subject (RecordNameStrategy's ``com.example.User``, a Protobuf reference's ``shared/money.proto``) is the
TOPIC resource of its own name; PREFIXED ACLs, ``*`` and ``super.users`` work as for topics. A denial is HTTP 403
with Confluent's error_code 40301. Pure but for the clock-free cache; no trio.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from kafkalite.authz.acl import CLUSTER_NAME, Op, ResourceType
from kafkalite.registry.core import RegistryError

METHOD_KEY = "kafkalite.schema.registry.authentication.method"
METHODS = ("NONE", "BASIC")
ANONYMOUS = "User:ANONYMOUS"
_CACHE = 1024
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def unauthorized(message: str = "Unauthorized") -> RegistryError:
    return RegistryError(401, 401, message)


def subject_topic(subject: str) -> str:
    """The TOPIC resource that governs ``subject`` (TopicNameStrategy: ``<topic>-key`` / ``<topic>-value``)."""
    for suffix in ("-value", "-key"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)]
    return subject


def basic_credentials(header: str) -> tuple[str, str]:
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        raise unauthorized()
    try:
        text = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise unauthorized() from None
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise unauthorized()
    return user, password


class Users:
    """The broker's SASL users, checked with a password: ``plain()`` gives the PLAIN users (name -> password)
    of every SASL listener; ``scram(user, mechanism)`` the stored SCRAM credential or None."""

    def __init__(self, plain: Callable[[], Iterable[dict[str, str]]], scram: Callable[[str, str], Any]) -> None:
        self.plain = plain
        self.scram = scram
        self._ok: OrderedDict[tuple[str, bytes], object] = OrderedDict()

    def _matched(self, user: str, password: str) -> object | None:
        """What the password matched (a PLAIN entry's password, or a SCRAM credential), None: nothing."""
        for users in self.plain():
            expected = users.get(user)
            if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
                return ("PLAIN", expected)
        from kafkalite.security.scram import (  # SCRAM hashing: only for a password no PLAIN user matched
            MECHANISMS,
            credential_from_salted,
            salted_password,
        )

        for mech in _SCRAM:
            cred: object = self.scram(user, mech)
            if cred is None or mech not in MECHANISMS:
                continue
            salt, iterations, stored = (getattr(cred, "salt", b""), getattr(cred, "iterations", 0),
                                        getattr(cred, "stored_key", b""))
            derived = credential_from_salted(mech, salt, salted_password(mech, password, salt, iterations), iterations)
            if hmac.compare_digest(derived.stored_key, stored):
                return cred
        return None

    def cached(self, user: str, password: str) -> bool:
        """A check that needs no hashing: this password matched the credential the user has now."""
        key = (user, hashlib.sha256(f"{user}\0{password}".encode()).digest())
        hit = self._ok.get(key)
        if hit is None:
            return False
        if isinstance(hit, tuple):
            still = any(u.get(user) == hit[1] for u in self.plain())
        else:
            still = any(self.scram(user, m) is hit for m in _SCRAM)
        if not still:
            del self._ok[key]
        return still

    def verify(self, user: str, password: str) -> bool:
        """The full check (PBKDF2 for SCRAM users: run it off the event loop)."""
        matched = self._matched(user, password)
        if matched is None:
            return False
        key = (user, hashlib.sha256(f"{user}\0{password}".encode()).digest())
        self._ok[key] = matched
        if len(self._ok) > _CACHE:
            self._ok.popitem(last=False)
        return True


class Access:
    """One request's principal against the authorizer (None: everything is allowed)."""

    def __init__(self, authorizer: Any, principal: str, host: str) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self.host = host or "*"

    def subject_allowed(self, op: Op, subject: str) -> bool:
        if self.authorizer is None:
            return True
        return bool(self.authorizer.authorize(self.principal, self.host, op, ResourceType.TOPIC,
                                              subject_topic(subject)))

    def subject(self, op: Op, subject: str) -> None:
        if not self.subject_allowed(op, subject):
            raise denied(self.principal, op, f"Subject: {subject}")

    def cluster(self, op: Op) -> None:
        if self.authorizer is not None and not self.authorizer.authorize(
                self.principal, self.host, op, ResourceType.CLUSTER, CLUSTER_NAME):
            raise denied(self.principal, op, "Global")

    def visible(self, subjects: Iterable[str]) -> list[str]:
        return [s for s in subjects if self.subject_allowed(Op.DESCRIBE, s)]


OPEN = Access(None, ANONYMOUS, "")


def denied(principal: str, op: Op, what: str) -> RegistryError:
    return RegistryError(403, 40301, f"User {principal} is denied operation {op.name} on {what}")
