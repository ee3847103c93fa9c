"""The answer to a request its handler failed on: the API's own response, every error code set.

Kafka never closes a connection because handling a request threw: ``KafkaApis.handle`` catches the exception
and answers with ``request.getErrorResponse(e)`` -- each request class builds its response with the error
(``UNKNOWN_SERVER_ERROR`` for an exception that is not an ``ApiException``) on the top level if the response has
an error code there, and on every entry the request named (each topic and partition of a Produce, Fetch,
ListOffsets or OffsetCommit, each resource of a DescribeConfigs, each group of a DescribeGroups, ...). A client
reads that as a retriable or fatal error for those entries and carries on; a closed connection instead makes
it re-bootstrap, and librdkafka logs the broker as down. The one exception is an acks=0 Produce, which has no
response: Kafka closes that connection, and so does the caller of this module.

Kafka writes ``getErrorResponse`` by hand for each of its ~70 request classes. Here one function derives it
from the generated message classes, since the pattern is the same everywhere (the response's entry lists
mirror the request's, keyed by the same names):

- every int16 field named ``error_code`` or ``*_error_code`` of the response gets the code;
- a list field of the response whose entries carry an error code somewhere is filled with one entry per entry
  of the request's matching list: the request list whose entries share the most key fields (names, ids,
  indexes, types: ``name``, ``topic_id``, ``partition_index``, ``resource_name``, ...) with the response's
  entries, or a list of plain strings/ints naming them (DescribeGroups ``groups``, OffsetFetch v0-7
  ``partition_indexes``), or failing that the request's only list of entries, position by position
  (CreateAcls' ``creations`` -> ``results``); the entry's key fields are copied from the request's entry;
- every other field keeps its default (Kafka's ``default`` from the spec, e.g. -1 for offsets and ids).

Fields a version does not have are ignored by its encoder, so one response object serves every version.
"""
from __future__ import annotations

import logging
import typing
import uuid
from functools import cache
from typing import Any

from kafkalite.errors import ConnectionClosed
from kafkalite_wire.messages import REGISTRY

_log = logging.getLogger("kafkalite.server.connection")

UNKNOWN_SERVER_ERROR = -1
_PRODUCE_KEY = 0

#: response key field -> request fields that name the same thing (Fetch requests say ``partition``, its
#: response ``partition_index``; Produce says ``index`` for both)
_ALIASES: dict[str, tuple[str, ...]] = {
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "index": ("index", "partition_index", "partition"),
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
}
_SCALARS = (str, int, uuid.UUID)


def _is_error_field(name: str) -> bool:
    return name == "error_code" or name.endswith("_error_code")


def _unwrap_optional(tp: Any) -> Any:
    """``X | None`` -> ``X`` (nullable strings, nullable lists: Metadata's ``topics`` is null for "all")."""
    args = typing.get_args(tp)
    if type(None) in args and len(args) == 2:
        return args[0] if args[1] is type(None) else args[1]
    return tp


def _is_key_field(name: str, tp: Any) -> bool:
    if tp not in _SCALARS:
        return False
    return name in ("topic", "partition") or name.endswith(("name", "_id", "index", "_type", "key"))


class _Shape:
    """What the builder needs to know of one generated class: its fields' types, split by role."""

    __slots__ = ("cls", "errors", "has_errors", "keys", "lists")

    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls)
        self.cls = cls
        self.errors: list[str] = []
        self.keys: dict[str, Any] = {}          # key field -> its scalar type
        self.lists: dict[str, Any] = {}         # list field -> element type (a class, or str/int/...)
        for name in cls.__slots__:              # type: ignore[attr-defined]
            tp = _unwrap_optional(hints.get(name))
            if name == "unknown_tagged_fields" or tp is None:
                continue
            if _is_error_field(name) and tp is int:
                self.errors.append(name)
            elif typing.get_origin(tp) is list:
                (elem,) = typing.get_args(tp)
                self.lists[name] = elem
            elif _is_key_field(name, tp):
                self.keys[name] = tp
        self.has_errors = bool(self.errors)

    def key_names(self, name: str) -> tuple[str, ...]:
        return _ALIASES.get(name, (name,))


@cache
def _shape(cls: type) -> _Shape:
    shape = _Shape(cls)
    # an entry list matters only if error codes live somewhere inside it
    shape.has_errors = shape.has_errors or any(
        _is_struct(elem) and _shape(elem).has_errors for elem in shape.lists.values())
    return shape


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "__slots__") and tp not in _SCALARS


def _overlap(resp: _Shape, req_elem: Any) -> int:
    """How many of the response entry's key fields the request's entries name."""
    if _is_struct(req_elem):
        req = _shape(req_elem)
        return sum(1 for k in resp.keys if any(a in req.keys for a in resp.key_names(k)))
    return 1 if any(t is req_elem for t in resp.keys.values()) else 0


def _source_list(resp_field: str, resp_elem: _Shape, req_obj: Any, req_shape: _Shape) -> list[Any]:
    """The request's list whose entries the response list ``resp_field`` answers, [] if none does."""
    best: tuple[int, int, int] | None = None
    chosen: list[Any] = []
    struct_lists = []
    for name, elem in req_shape.lists.items():
        value = getattr(req_obj, name, None) or []
        if _is_struct(elem):
            struct_lists.append(value)
        score = _overlap(resp_elem, elem)
        if not score:
            continue
        rank = (score, 1 if value else 0, 1 if name == resp_field else 0)
        if best is None or rank > best:
            best, chosen = rank, value
    if best is None and not resp_elem.keys and len(struct_lists) == 1:
        # entries known by position only (CreateAcls creations -> results), unless the request's entries
        # are answered deeper down (DescribeLogDirs: its topics are listed inside each log dir's result)
        (req_elem,) = [e for e in req_shape.lists.values() if _is_struct(e)]
        if not any(_is_struct(e) and _overlap(_shape(e), req_elem) for e in resp_elem.lists.values()):
            return struct_lists[0]
    return chosen


def _fill(cls: type, req_obj: Any, code: int, top: bool) -> Any:
    shape = _shape(cls)
    out = cls()
    for name in shape.errors:
        setattr(out, name, code)
    if shape.errors and hasattr(out, "base_offset"):   # Produce: INVALID_OFFSET, as Kafka's PartitionResponse(error)
        out.base_offset = -1
    if getattr(out, "records", b"") is None:   # empty, not null: ShareFetch v1+ records are not nullable
        out.records = b""
    if req_obj is None:
        return out
    if not _is_struct(type(req_obj)):      # a plain name or index from a list of strings/ints
        for name, tp in shape.keys.items():
            if isinstance(req_obj, tp) and not isinstance(req_obj, bool):
                setattr(out, name, req_obj)
                break
        return out
    req_shape = _shape(type(req_obj))
    if not top:
        for name in shape.keys:
            for alias in shape.key_names(name):
                if alias in req_shape.keys:
                    value = getattr(req_obj, alias)
                    if value is not None:   # a null name (a topic named by id) may not be nullable here
                        setattr(out, name, value)
                    break
    for name, elem in shape.lists.items():
        if not _is_struct(elem):
            continue
        elem_shape = _shape(elem)
        if not elem_shape.has_errors and not elem_shape.keys:
            continue
        if not elem_shape.has_errors:
            # a list of keys only (AlterClientQuotas' entity): copied when the request has it by name
            src = getattr(req_obj, name, None) if name in req_shape.lists else None
        else:
            src = _source_list(name, elem_shape, req_obj, req_shape)
        if src:
            setattr(out, name, [_fill(elem, item, code, False) for item in src])
    return out


def error_response(response_class: type, request: Any, error_code: int = UNKNOWN_SERVER_ERROR) -> Any:
    """``response_class``'s answer to ``request`` with ``error_code`` on the top level and on every entry the
    request named (Kafka's ``AbstractRequest.getErrorResponse``)."""
    return _fill(response_class, request, error_code, True)


# -- the broker's side: answering a request whose handler raised -------------------------------------------

#: failures whose traceback was logged already, by (api key, exception type, where it was raised); bounded
_logged: dict[tuple[int, str, str, int], int] = {}
_LOGGED_MAX = 1024


def _signature(api_key: int, exc: BaseException) -> tuple[int, str, str, int]:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ("?", 0)
    return (api_key, type(exc).__qualname__, *where)


def log_failure(log: logging.Logger, conn: Any, api_name: str, version: int, api_key: int,
                exc: BaseException) -> None:
    """The traceback once per kind of failure (API, exception type, raising line); a line for each repeat,
    so a client retrying a request that keeps failing does not flood the log with the same traceback."""
    sig = _signature(api_key, exc)
    seen = _logged.get(sig)
    if seen is None:
        if len(_logged) >= _LOGGED_MAX:
            _logged.clear()
        _logged[sig] = 1
        log.error("%r: %s v%d failed; answered UNKNOWN_SERVER_ERROR", conn, api_name, version, exc_info=exc)
    else:
        _logged[sig] = seen + 1
        log.error("%r: %s v%d failed again (%s: %s, #%d; traceback logged the first time); answered "
                  "UNKNOWN_SERVER_ERROR", conn, api_name, version, type(exc).__name__, exc, seen + 1)


async def answer_failure(conn: Any, header: Any, body: Any, exc: Exception, offload: bool) -> Any:
    """What the connection sends for a request whose handler raised ``exc``: the API's error response. An
    acks=0 Produce has none (the client reads no response): its connection is closed, as Kafka closes it.
    A request big enough to have been decoded off the loop gets its error response built off the loop too
    (one entry per partition of a million-partition request)."""
    import trio

    info = REGISTRY[header.api_key]
    log_failure(_log, conn, info.name, header.api_version, header.api_key, exc)
    if header.api_key == _PRODUCE_KEY and getattr(body, "acks", None) == 0:
        raise ConnectionClosed(f"acks=0 {info.name} failed ({type(exc).__name__}); it has no response") from None
    if offload:
        return await trio.to_thread.run_sync(error_response, info.response_class, body)
    return error_response(info.response_class, body)


async def encode_failure(conn: Any, header: Any, body: Any, exc: Exception, offload: bool) -> Any:
    """The encoded answer to a request whose response could not be encoded (``exc``: a value its field cannot
    hold, e.g. an int64 past 2^63-1): the API's error response, as if the handler had raised. Its key fields
    come from the decoded request, so they fit; if even it fails, the exception ends the connection."""
    import trio  # (this module is imported by handlers at start; trio only on this rare path, as above)

    from kafkalite_wire import api  # the codec's encoder, on this rare path only

    response = await answer_failure(conn, header, body, exc, offload)
    if offload:
        return await trio.to_thread.run_sync(api.encode_response, header, response)
    return api.encode_response(header, response)
