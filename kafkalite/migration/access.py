"""Who may do what, carried over: ACLs, SCRAM credentials, client quotas.

**ACLs**: every binding of the source (DescribeAcls with an any-filter) is created on the target (CreateAcls adds
what is missing, so a second run changes nothing). The target needs an authorizer (Kafka's StandardAuthorizer,
``authorizer.class.name``) for them to mean anything; without one CreateAcls fails with SECURITY_DISABLED, which
is reported.

**SCRAM credentials**: kafkalite keeps, as Kafka does, only each credential's salt, iterations, StoredKey and
ServerKey (``kafkalite-scram-credentials.json`` in its data directory), never the password or the salted
password. Kafka's AlterUserScramCredentials takes a *salted password* (the controller derives the keys from it),
so a credential cannot be copied from its keys: the target would need the password, or an offline route that
writes the metadata records themselves (``kafkalite eject``). So ``--from-data-dir DIR`` reads the source's salts
and keys, and ``--scram-passwords FILE`` (lines ``user=password``) gives the passwords: each is checked against
the stored key (the same PBKDF2 + HMAC the SASL exchange does), then sent with the *source's salt and
iterations*, so the target's credential is byte for byte the source's (the same StoredKey and ServerKey; any
client that logged in before logs in the same way). A user without a password in the file, or whose password
does not match, is reported as not carried; passwords are never printed.

**Client quotas**: DescribeClientQuotas (all entities, default entities included) on the source and
AlterClientQuotas on the target, through the project's wire client (confluent-kafka has no client-quota API).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalite.client.wire import Connection, Security, WireError, bootstrap, error_name
from kafkalite.migration.source import Source
from kafkalite_wire.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

SCRAM_FILE = "kafkalite-scram-credentials.json"   # kafkalite.security.scram_store's file (read, never written)
_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


# -- ACLs ------------------------------------------------------------------------------------------------------
def source_acls(admin: Any, timeout: float) -> list[Any]:
    from confluent_kafka.admin import (  # confluent-kafka: checked by the CLI
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return list(admin.describe_acls(f, request_timeout=timeout).result(timeout=timeout))


def create_acls(admin: Any, acls: list[Any], timeout: float) -> list[str]:
    """Create the bindings on the target; the problems."""
    if not acls:
        return []
    problems = []
    try:
        futs = admin.create_acls(acls, request_timeout=timeout)
    except Exception as exc:
        return [f"ACLs not carried: {exc}"]
    for binding, fut in futs.items():
        try:
            fut.result(timeout=timeout)
        except Exception as exc:
            problems.append(f"ACL {describe_acl(binding)} not carried: {exc}")
    return problems


def describe_acl(b: Any) -> str:
    return (f"{b.permission_type.name} {b.principal} {b.operation.name} on {b.restype.name}:{b.name} "
            f"({b.resource_pattern_type.name}, host {b.host})")


# -- SCRAM -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredCredential:
    user: str
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def matches(self, password: str) -> bool:
        algo = _HASH[self.mechanism]
        salted = hashlib.pbkdf2_hmac(algo, password.encode("utf-8"), self.salt, self.iterations)
        client_key = hmac.new(salted, b"Client Key", algo).digest()
        stored = hashlib.new(algo, client_key).digest()
        server = hmac.new(salted, b"Server Key", algo).digest()
        return hmac.compare_digest(stored, self.stored_key) and hmac.compare_digest(server, self.server_key)


def read_credentials(data_dir: str | Path) -> list[StoredCredential]:
    """The source's SCRAM credentials from its data directory (missing file: none)."""
    path = Path(data_dir) / SCRAM_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read: {exc}") from None
    out = []
    for user, mechs in sorted(doc.get("users", {}).items()):
        for mech, c in sorted(mechs.items()):
            if mech in _HASH:
                out.append(StoredCredential(user, mech, base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                            base64.b64decode(c["server_key"]), int(c["iterations"])))
    return out


def read_passwords(path: str | Path) -> dict[str, str]:
    """``user=password`` lines (``#`` comments); the password is everything after the first ``=``."""
    out: dict[str, str] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, password = line.partition("=")
        if not sep or not user.strip():
            raise ValueError(f"{path}:{n}: expected user=password")
        out[user.strip()] = password
    return out


def copy_scram(admin: Any, creds: list[StoredCredential], passwords: dict[str, str], timeout: float
               ) -> tuple[list[str], list[str], list[str]]:
    """Upsert each credential whose password is known and matches: (carried "user/mechanism", not carried for
    want of a password, problems)."""
    from confluent_kafka.admin import (  # as above
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    carried: list[str] = []
    missing: list[str] = []
    problems: list[str] = []
    for c in creds:
        pw = passwords.get(c.user)
        if pw is None:
            missing.append(f"SCRAM user {c.user} ({c.mechanism}) not carried: no password for it in "
                            "--scram-passwords (kafkalite keeps only the derived keys, as Kafka does)")
            continue
        if not c.matches(pw):
            problems.append(f"SCRAM user {c.user} ({c.mechanism}) not carried: the given password does not "
                            "match the source's credential")
            continue
        mech = ScramMechanism[c.mechanism.replace("-", "_")]
        up = UserScramCredentialUpsertion(c.user, ScramCredentialInfo(mech, c.iterations), pw.encode("utf-8"),
                                          c.salt)
        try:   # one alteration per request: Kafka's controller refuses two for one user in one request
            futs = admin.alter_user_scram_credentials([up], request_timeout=timeout)
            for f in futs.values():
                f.result(timeout=timeout)
            carried.append(f"{c.user}/{c.mechanism}")
        except Exception as exc:
            problems.append(f"SCRAM user {c.user} ({c.mechanism}) not carried: {exc}")
    return carried, missing, problems


def scram_users(admin: Any, timeout: float) -> dict[str, list[str]]:
    """Users with SCRAM credentials on a cluster (DescribeUserScramCredentials): user -> mechanisms."""
    try:
        res = admin.describe_user_scram_credentials(request_timeout=timeout).result(timeout=timeout)
    except Exception:
        return {}
    return {u: [i.mechanism.name.replace("_", "-") for i in d.scram_credential_infos] for u, d in res.items()}


# -- client quotas ---------------------------------------------------------------------------------------------
Entity = tuple[tuple[str, str | None], ...]


def source_quotas(source: Source) -> dict[Entity, dict[str, float]]:
    meta = source.meta or source.metadata()
    addr = next(iter(meta.brokers.values()))
    r = source._request(addr, DescribeClientQuotasRequest(components=[], strict=False), 1)
    if r.error_code:
        raise WireError(f"DescribeClientQuotas: {error_name(r.error_code)}: {r.error_message}", r.error_code)
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in r.entries or []}


def write_quotas(servers: str, security: Security | None, quotas: dict[Entity, dict[str, float]],
                 timeout: float) -> list[str]:
    if not quotas:
        return []
    E = AlterClientQuotasRequest
    entries = [E.EntryData(entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                           ops=[E.OpData(key=k, value=v, remove=False) for k, v in sorted(values.items())])
               for entity, values in sorted(quotas.items(), key=lambda kv: str(kv[0]))]
    last: Exception | None = None
    for host, port in bootstrap(servers):
        try:
            with Connection(host, port, timeout=timeout, security=security, client_id="kafkalite-migrate") as c:
                r = c.request(AlterClientQuotasRequest(entries=entries, validate_only=False), 1)
            break
        except (OSError, WireError) as exc:
            last = exc
    else:
        return [f"client quotas not carried: {last}"]
    return [f"client quota {_entity(e.entity)} not carried: {error_name(e.error_code)}: {e.error_message}"
            for e in r.entries if e.error_code]


def _entity(entity: Any) -> str:
    return ",".join(f"{e.entity_type}={e.entity_name if e.entity_name is not None else '<default>'}" for e in entity)


def entity_name(entity: Entity) -> str:
    return ",".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)
