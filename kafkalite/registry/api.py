"""The REST routes of Confluent Schema Registry, over :class:`~kafkalite.registry.core.Registry`.

    GET    /                                              {}
    GET    /schemas/types                                 ["JSON","PROTOBUF","AVRO"]
    GET    /schemas                                       every version (subjectPrefix, deleted, latestOnly)
    GET    /schemas/ids/{id}[/schema|/subjects|/versions] by id (subject: its context; deleted)
    (``format=serialized`` on a schema's GETs and lookups: a Protobuf schema as its base64 FileDescriptorProto)
    GET    /subjects                                      subject names (subjectPrefix, deleted)
    POST   /subjects/{s}                                  look a schema up (normalize, deleted)
    DELETE /subjects/{s}                                  soft or permanent (permanent) delete
    GET    /subjects/{s}/versions                         version numbers (deleted)
    POST   /subjects/{s}/versions                         register (normalize): {"id": N}
    GET    /subjects/{s}/versions/{v}[/schema|/referencedby]   v: 1.., latest or -1 (deleted)
    DELETE /subjects/{s}/versions/{v}                     (permanent)
    GET|PUT|DELETE /config[/{s}]                          compatibility (defaultToGlobal)
    GET|PUT|DELETE /mode[/{s}]                            READWRITE, READONLY, IMPORT (force, defaultToGlobal)
    POST   /compatibility/subjects/{s}/versions[/{v}]     {"is_compatible": bool} (verbose: + "messages")
    GET    /contexts                                      the contexts in use

A path that is not one of these is 404 (error_code 404), a known path with another method 405. Each route
checks what :mod:`kafkalite.registry.auth` maps its Confluent operation to (403, 40301 when denied); lists
show only the subjects the caller may see.
"""
from __future__ import annotations

import json
from typing import Any

from kafkalite.authz.acl import Op
from kafkalite.httpd.server import Request, Response
from kafkalite.registry import compat
from kafkalite.registry.auth import OPEN, Access
from kafkalite.registry.core import (
    DEFAULT_CONTEXT,
    Registry,
    RegistryError,
    context_of,
    schema_json,
)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODIES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                   "application/json", "application/octet-stream")


def body_json(req: Request) -> dict[str, Any]:
    """The request body as a JSON object: 415 for a content type Confluent does not take, 400/422 otherwise."""
    ctype = req.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype not in ACCEPTED_BODIES:
        raise RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
    try:
        data = json.loads(req.body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise RegistryError(400, 400, f"Unexpected character or malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RegistryError(422, 422, "Unrecognized request body: expected a JSON object")
    return data


def _flag(req: Request, name: str) -> bool:
    return req.query.get(name, "false").strip().lower() == "true"


def _schema_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RegistryError(404, 40403, f"Schema {text} not found") from None


def _raw(text: str) -> Response:
    return Response(200, CONTENT_TYPE, text.encode("utf-8"))


def _not_found() -> RegistryError:
    return RegistryError(404, 404, "HTTP 404 Not Found")


def _method() -> RegistryError:
    return RegistryError(405, 405, "HTTP 405 Method Not Allowed")


def dispatch(reg: Registry, req: Request, access: Access = OPEN) -> Any:
    parts = req.parts
    method = "GET" if req.method == "HEAD" else req.method
    if not parts:
        if method != "GET":
            raise _method()
        return {}
    head, rest = parts[0], parts[1:]
    if head == "subjects":
        return _subjects(reg, req, method, rest, access)
    if head == "schemas":
        return _schemas(reg, req, method, rest, access)
    if head in ("config", "mode") and len(rest) <= 1:
        subject = rest[0] if rest else None
        op = Op.DESCRIBE_CONFIGS if method == "GET" else Op.ALTER_CONFIGS
        if subject is None:
            access.cluster(op)
        else:
            access.subject(op, subject)
        if head == "config":
            return _config(reg, req, method, subject)
        return _mode(reg, req, method, subject)
    if head == "compatibility" and len(rest) in (3, 4) and rest[0] == "subjects" and rest[2] == "versions":
        if method != "POST":
            raise _method()
        access.subject(Op.WRITE, rest[1])
        msgs = reg.check_compatibility(rest[1], rest[3] if len(rest) == 4 else None, body_json(req),
                                       _flag(req, "normalize"))
        out: dict[str, Any] = {"is_compatible": not msgs}
        if _flag(req, "verbose"):
            out["messages"] = msgs
        return out
    if head == "contexts" and not rest and method == "GET":
        return sorted({DEFAULT_CONTEXT} | {context_of(s) for s in reg.versions})
    raise _not_found()


def _subjects(reg: Registry, req: Request, method: str, rest: list[str], access: Access) -> Any:
    deleted = _flag(req, "deleted")
    if not rest:
        if method != "GET":
            raise _method()
        return access.visible(reg.subjects(req.query.get("subjectPrefix", ""), deleted))
    subject = rest[0]
    access.subject(Op.DELETE if method == "DELETE" else Op.WRITE if method == "POST" and len(rest) == 2
                   else Op.READ, subject)
    if len(rest) == 1:
        if method == "POST":
            v = reg.lookup(subject, body_json(req), _flag(req, "normalize"), deleted)
            return schema_json(reg.formatted(v, req.query.get("format")))
        if method == "DELETE":
            return reg.delete_subject(subject, _flag(req, "permanent"))
        raise _method()
    if rest[1] != "versions" or len(rest) > 4:
        raise _not_found()
    if len(rest) == 2:
        if method == "GET":
            versions = reg.all_versions(subject) if deleted else reg.live(subject)
            if not versions:
                raise RegistryError(404, 40401, f"Subject '{subject}' not found.")
            return [v.version for v in versions]
        if method == "POST":
            return reg.register(subject, body_json(req), _flag(req, "normalize"))
        raise _method()
    version = rest[2]
    if len(rest) == 3:
        if method == "GET":
            return schema_json(reg.formatted(reg.version(subject, version, deleted), req.query.get("format")))
        if method == "DELETE":
            return reg.delete_version(subject, version, _flag(req, "permanent"))
        raise _method()
    if method != "GET":
        raise _method()
    if rest[3] == "schema":
        return _raw(reg.formatted(reg.version(subject, version, deleted), req.query.get("format")).schema)
    if rest[3] == "referencedby":
        v = reg.version(subject, version, True)
        return sorted({x.id for x in reg.referenced_by(subject, v.version, deleted)})
    raise _not_found()


def _schemas(reg: Registry, req: Request, method: str, rest: list[str], access: Access) -> Any:
    if method != "GET":
        raise _method()
    deleted = _flag(req, "deleted")
    if not rest:
        prefix = req.query.get("subjectPrefix", "")
        latest_only = _flag(req, "latestOnly")
        out = []
        for name in reg.subjects(prefix, deleted):
            if not access.subject_allowed(Op.READ, name):
                continue
            versions = reg.all_versions(name) if deleted else reg.live(name)
            for v in versions[-1:] if latest_only else versions:
                out.append(schema_json(reg.formatted(v, req.query.get("format"))))
        return out
    if rest == ["types"]:
        return list(compat.TYPES)
    if len(rest) < 2 or rest[0] != "ids" or len(rest) > 3:
        raise _not_found()
    sid = _schema_id(rest[1])
    subject = req.query.get("subject")
    if access.authorizer is not None:   # SCHEMA_READ: READ on any subject holding the id
        holders = {v.subject for v in reg.id_versions(sid, subject, deleted=True)}
        if not any(access.subject_allowed(Op.READ, s) for s in holders):
            raise RegistryError(403, 40301, f"User {access.principal} is denied operation READ on Schema: {sid}")
    if len(rest) == 2:
        v = reg.formatted(reg.by_schema_id(sid, subject), req.query.get("format"))
        out_one = schema_json(v, subject=False)
        if _flag(req, "fetchMaxId"):
            out_one["maxId"] = reg.max_id.get(context_of(subject), 0)
        return out_one
    what = rest[2]
    if what == "schema":
        return _raw(reg.formatted(reg.by_schema_id(sid, subject), req.query.get("format")).schema)
    if what == "subjects":
        return access.visible(sorted({v.subject for v in reg.id_versions(sid, subject, deleted)}))
    if what == "versions":
        return [{"subject": v.subject, "version": v.version} for v in reg.id_versions(sid, subject, deleted)
                if access.subject_allowed(Op.DESCRIBE, v.subject)]
    raise _not_found()


def _config(reg: Registry, req: Request, method: str, subject: str | None) -> Any:
    if method == "GET":
        return reg.get_config(subject, _flag(req, "defaultToGlobal"))
    if method == "PUT":
        return reg.set_config(subject, body_json(req))
    if method == "DELETE":
        return reg.delete_config(subject)
    raise _method()


def _mode(reg: Registry, req: Request, method: str, subject: str | None) -> Any:
    if method == "GET":
        return reg.get_mode(subject, _flag(req, "defaultToGlobal"))
    if method == "PUT":
        return reg.set_mode(subject, body_json(req).get("mode"), _flag(req, "force"))
    if method == "DELETE":
        if subject is None:
            raise _method()
        return reg.delete_mode(subject)
    raise _method()
