"""``kafkalite schemas``: a command line for a Confluent-compatible Schema Registry (kafkalite's own,
``kafkalite serve --schema-registry``, or any other), over its REST API.

    kafkalite schemas [--url URL] [--user USER --password PASSWORD] [--json] OPERATION ...
      subjects [--prefix P] [--deleted]                    the subjects
      versions SUBJECT [--deleted]                         a subject's versions
      get SUBJECT [VERSION] | get --id ID [--format F]     a version (latest by default) or a schema by id
      register SUBJECT FILE [--type T] [--reference NAME=SUBJECT:VERSION ...] [--normalize]
      check SUBJECT FILE [--version V] [--type T] [--reference ...] [--normalize]   exit 1 if incompatible
      delete SUBJECT [VERSION] [--permanent]               soft delete, or permanent (after a soft one)
      config [SUBJECT] [--set LEVEL | --delete]            compatibility level (global without SUBJECT)
      mode [SUBJECT] [--set MODE [--force] | --delete]     READWRITE, READONLY, READONLY_OVERRIDE, IMPORT

The URL is ``--url``, else ``$KAFKALITE_SCHEMA_REGISTRY_URL``, else ``http://127.0.0.1:8081`` (``serve
--schema-registry``'s default). A schema file's type comes from ``--type`` or its extension (``.avsc`` Avro,
``.json`` JSON Schema, ``.proto`` Protobuf). ``--json`` prints the registry's answers as they are. Exit codes:
0 done (``check``: compatible), 1 the registry said no (its ``error_code`` and message on stderr; ``check``:
incompatible, the reasons on stdout), 2 a usage error. Client-side: urllib only, nothing of the broker.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8081"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
TYPES_BY_SUFFIX = {".avsc": "AVRO", ".avro": "AVRO", ".json": "JSON", ".proto": "PROTOBUF"}


class RegistryCallError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None,
                   help=f"the registry's base URL (default: $KAFKALITE_SCHEMA_REGISTRY_URL, else {DEFAULT_URL})")
    p.add_argument("--user", help="HTTP Basic user (a broker SASL user when kafkalite's registry has auth on)")
    p.add_argument("--password", help="HTTP Basic password (default: $KAFKALITE_SCHEMA_REGISTRY_PASSWORD)")
    p.add_argument("--json", action="store_true", help="print the registry's JSON answers as they are")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    sub = p.add_subparsers(dest="op", required=True, metavar="OPERATION")

    s = sub.add_parser("subjects", help="list the subjects")
    s.add_argument("--prefix", default="", help="only subjects starting with this (subjectPrefix)")
    s.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")

    s = sub.add_parser("versions", help="list a subject's versions")
    s.add_argument("subject", help="the subject (e.g. orders-value)")
    s.add_argument("--deleted", action="store_true", help="include soft-deleted versions")

    s = sub.add_parser("get", help="show a subject's version (latest by default) or a schema by id")
    s.add_argument("subject", nargs="?", help="the subject (leave out with --id)")
    s.add_argument("version", nargs="?", default="latest", help="a version number or 'latest' (default)")
    s.add_argument("--id", type=int, help="show the schema with this id instead")
    s.add_argument("--format", help="the schema in another format (Protobuf: 'serialized', base64 descriptor)")
    s.add_argument("--schema-only", action="store_true", help="print only the schema text")
    s.add_argument("--deleted", action="store_true", help="a soft-deleted version may be shown")

    for name, help_ in (("register", "register a schema from a file under a subject (prints its id)"),
                        ("check", "check a schema file's compatibility with a subject (exit 1: incompatible)")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("subject", help="the subject")
        s.add_argument("file", help="the schema file ('-' for stdin)")
        s.add_argument("--type", type=str.upper, choices=("AVRO", "JSON", "PROTOBUF"),
                       help="the schema type (default: from the file's extension, else AVRO)")
        s.add_argument("--reference", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                       help="a schema reference (repeatable): the name used in the schema (an Avro full name, a "
                            "JSON $ref, a .proto import path) and the subject and version that hold it")
        s.add_argument("--normalize", action="store_true", help="normalize the schema first (?normalize=true)")
        if name == "check":
            s.add_argument("--version", default=None,
                           help="check against this version only ('latest'; default: as the subject's level says)")

    s = sub.add_parser("delete", help="delete a subject or one of its versions (soft unless --permanent)")
    s.add_argument("subject", help="the subject")
    s.add_argument("version", nargs="?", help="one version (a number or 'latest'); default: the whole subject")
    s.add_argument("--permanent", action="store_true",
                   help="delete for good (the subject or version must have been soft-deleted first)")

    s = sub.add_parser("config", help="show or set the compatibility level (global without a subject)")
    s.add_argument("subject", nargs="?", help="the subject (default: the global config)")
    group = s.add_mutually_exclusive_group()
    group.add_argument("--set", type=str.upper, choices=LEVELS, metavar="LEVEL",
                       help=f"set the level: {', '.join(LEVELS)}")
    group.add_argument("--delete", action="store_true", help="remove the subject's (or global) setting")

    s = sub.add_parser("mode", help="show or set the mode (global without a subject)")
    s.add_argument("subject", nargs="?", help="the subject (default: the global mode)")
    group = s.add_mutually_exclusive_group()
    group.add_argument("--set", type=str.upper, choices=MODES, metavar="MODE", help=f"set it: {', '.join(MODES)}")
    group.add_argument("--delete", action="store_true", help="remove the subject's mode")
    s.add_argument("--force", action="store_true", help="with --set IMPORT: even if subjects exist")


class Client:
    def __init__(self, url: str, user: str | None, password: str | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {token}"

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        q = {k: ("true" if v is True else v) for k, v in query.items() if v not in (None, False, "")}
        url = self.url + path + (("?" + urllib.parse.urlencode(q)) if q else "")
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            try:
                err = json.loads(text)
                raise RegistryCallError(exc.code, int(err.get("error_code", exc.code)),
                                        str(err.get("message", text))) from None
            except (ValueError, AttributeError):
                raise RegistryCallError(exc.code, exc.code, text.strip() or str(exc.reason)) from None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _schema_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.file == "-":
        text, suffix = sys.stdin.read(), ""
    else:
        path = Path(args.file)
        text, suffix = path.read_text(encoding="utf-8"), path.suffix.lower()
    stype = args.type or TYPES_BY_SUFFIX.get(suffix, "AVRO")
    body: dict[str, Any] = {"schema": text}
    if stype != "AVRO":
        body["schemaType"] = stype
    refs = []
    for ref in args.reference:
        name, sep, rest = ref.partition("=")
        subject, sep2, version = rest.rpartition(":")
        if not sep or not sep2 or not name or not subject:
            raise ValueError(f"--reference {ref!r}: expected NAME=SUBJECT:VERSION")
        refs.append({"name": name, "subject": subject, "version": -1 if version == "latest" else int(version)})
    if refs:
        body["references"] = refs
    return body


def _show(args: argparse.Namespace, result: Any, human: str) -> None:
    print(json.dumps(result, indent=2) if args.json else human)


def _show_version(args: argparse.Namespace, v: dict[str, Any]) -> None:
    if args.schema_only:
        print(v.get("schema", ""))
        return
    head = [f"{k}: {v[k]}" for k in ("subject", "version", "id") if k in v]
    head.append(f"type: {v.get('schemaType', 'AVRO')}")
    for r in v.get("references") or []:
        head.append(f"reference: {r.get('name')} = {r.get('subject')} version {r.get('version')}")
    schema = v.get("schema", "")
    if v.get("schemaType", "AVRO") != "PROTOBUF" and args.format is None:
        with contextlib.suppress(ValueError):
            schema = json.dumps(json.loads(schema), indent=2)
    _show(args, v, "\n".join(head) + "\n" + schema)


def run(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("KAFKALITE_SCHEMA_REGISTRY_URL") or DEFAULT_URL
    password = args.password if args.password is not None else os.environ.get("KAFKALITE_SCHEMA_REGISTRY_PASSWORD")
    c = Client(url, args.user, password, args.timeout)
    op = args.op
    try:
        if op == "subjects":
            subjects = c.call("GET", "/subjects", subjectPrefix=args.prefix, deleted=args.deleted)
            _show(args, subjects, "\n".join(subjects))
        elif op == "versions":
            versions = c.call("GET", f"/subjects/{_segment(args.subject)}/versions", deleted=args.deleted)
            _show(args, versions, "\n".join(str(v) for v in versions))
        elif op == "get":
            if args.id is not None:
                v = c.call("GET", f"/schemas/ids/{args.id}", format=args.format)
                v = {"id": args.id, **v}
            elif args.subject:
                v = c.call("GET", f"/subjects/{_segment(args.subject)}/versions/{_segment(args.version)}",
                           format=args.format, deleted=args.deleted)
            else:
                print("kafkalite schemas get: error: give a SUBJECT or --id", file=sys.stderr)
                return 2
            _show_version(args, v)
        elif op == "register":
            out = c.call("POST", f"/subjects/{_segment(args.subject)}/versions", _schema_body(args),
                         normalize=args.normalize)
            _show(args, out, f"id {out.get('id')}")
        elif op == "check":
            path = f"/compatibility/subjects/{_segment(args.subject)}/versions"
            if args.version is not None:
                path += f"/{_segment(args.version)}"
            out = c.call("POST", path, _schema_body(args), verbose=True, normalize=args.normalize)
            ok = bool(out.get("is_compatible"))
            _show(args, out, "compatible" if ok else "\n".join(["incompatible", *out.get("messages", [])]))
            return 0 if ok else 1
        elif op == "delete":
            path = f"/subjects/{_segment(args.subject)}"
            if args.version is not None:
                path += f"/versions/{_segment(args.version)}"
            out = c.call("DELETE", path, permanent=args.permanent)
            deleted = out if isinstance(out, list) else [out]
            _show(args, out, "deleted version(s) " + ", ".join(str(v) for v in deleted))
        elif op in ("config", "mode"):
            path = f"/{op}" + (f"/{_segment(args.subject)}" if args.subject else "")
            if args.set:
                key = "compatibility" if op == "config" else "mode"
                out = c.call("PUT", path, {key: args.set}, force=getattr(args, "force", False))
            elif args.delete:
                out = c.call("DELETE", path)
            else:
                out = c.call("GET", path, defaultToGlobal=bool(args.subject))
            value = out.get("compatibilityLevel", out.get("compatibility", out.get("mode")))
            _show(args, out, str(value))
    except RegistryCallError as exc:
        print(f"kafkalite schemas: error: {exc.status} (error_code {exc.code}): {exc.message}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"kafkalite schemas: error: {url}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"kafkalite schemas: error: {exc}", file=sys.stderr)
        return 2
    return 0
