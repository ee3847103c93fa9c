"""The control API's endpoints. Reads are GET, changes POST with a JSON object body; every answer is JSON, an
error ``{"error": "..."}`` with 400 (a bad argument), 404 (no such endpoint/broker/rule), 405, 409 (a
cluster operation this setup cannot do, e.g. on a single broker: ClusterOpError's message) or 504 (a wait
that timed out).

    GET  /v1/describe                  the cluster (brokers, partitions: ClusterControl.describe) and faults
    GET  /v1/faults                    each broker's rules, pause state and counters
    POST /v1/faults/inject             {"api", "error", "count"=1 (null: until cleared), "partitions"=[
                                        {"topic","partition"} | "topic:p"], "mode"="answer"|"through", "broker"}
    POST /v1/faults/latency            {"ms", "api"=null (every API), "count"=null, "broker"}
    POST /v1/faults/drop               {"api"=null (every connection, now), "count"=1, "broker"}
    POST /v1/faults/pause | resume     {"broker"}
    POST /v1/faults/clear              {"rule"=null (every rule, and resume), "broker"}
    POST /v1/groups/wait               {"group", "state", "timeout"=30}
    POST /v1/cluster/stop | start | restart     {"broker"}
    POST /v1/cluster/move-leader       {"topic", "partition", "broker"}
    POST /v1/cluster/set-isr           {"topic", "partition", "isr": [ids]}
    POST /v1/cluster/move-coordinator  {"kind": "group"|"transaction", "key", "broker"}

``broker`` (a node id) is optional for faults: without it the fault is set on every broker.
"""
from __future__ import annotations

from typing import Any

import trio

from kafkalite.faults.control import ClusterOpError
from kafkalite.faults.plan import FaultError
from kafkalite.httpd.server import HttpError as ApiError
from kafkalite.httpd.server import Request


def _plans(server: Any, body: dict[str, Any]) -> list[Any]:
    plans = server.plans()
    broker = body.get("broker")
    if broker is None:
        return [plans[k] for k in sorted(plans)]
    try:
        return [plans[int(broker)]]
    except (KeyError, TypeError, ValueError):
        raise ApiError(404, f"no broker {broker!r} (brokers: {', '.join(map(str, sorted(plans)))})") from None


def _int(body: dict[str, Any], name: str, default: Any = ..., *, optional: bool = False) -> Any:
    value = body.get(name, default)
    if value is ...:
        raise ApiError(400, f"{name!r} is required")
    if value is None and (optional or default is None):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{name!r} must be a whole number, got {value!r}")
    return value


def _str(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise ApiError(400, f"{name!r} is required (a string)")
    return value


def _required(body: dict[str, Any], name: str) -> Any:
    if body.get(name) is None:
        raise ApiError(400, f"{name!r} is required (a Kafka name or number)")
    return _api_or_error(body[name])


def _api_or_error(value: Any) -> Any:
    if value is None or (isinstance(value, (str, int)) and not isinstance(value, bool)):
        return value
    raise ApiError(400, f"expected a name or a number, got {value!r}")


async def _faults(server: Any, op: str, body: dict[str, Any]) -> Any:
    plans = _plans(server, body)
    out: list[Any] = []
    try:
        for plan in plans:
            if op == "inject":
                parts = body.get("partitions")
                if parts is not None and not isinstance(parts, list):
                    raise ApiError(400, "'partitions' must be a list")
                rule = plan.inject(_required(body, "api"), _required(body, "error"),
                                   _int(body, "count", 1, optional=True), parts, str(body.get("mode", "answer")))
                out.append({"broker": plan.node_id, "rule": rule.describe()})
            elif op == "latency":
                rule = plan.latency(_int(body, "ms"), _api_or_error(body.get("api")), _int(body, "count", None))
                out.append({"broker": plan.node_id, "rule": rule.describe()})
            elif op == "drop":
                api = _api_or_error(body.get("api"))
                result = plan.drop_connections(api, _int(body, "count", 1, optional=True))
                out.append({"broker": plan.node_id, "dropped": result} if isinstance(result, int)
                           else {"broker": plan.node_id, "rule": result.describe()})
            elif op == "pause":
                plan.pause()
                out.append({"broker": plan.node_id, "paused": True})
            elif op == "resume":
                plan.resume()
                out.append({"broker": plan.node_id, "paused": False})
            elif op == "clear":
                out.append({"broker": plan.node_id, "cleared": plan.clear(_int(body, "rule", None))})
            else:
                raise ApiError(404, f"no fault operation {op!r}")
    except FaultError as exc:
        raise ApiError(404 if str(exc).startswith("no fault rule") else 400, str(exc)) from None
    return {"results": out}


async def _wait_group(server: Any, body: dict[str, Any]) -> Any:
    group, state = _str(body, "group"), _str(body, "state")
    timeout = body.get("timeout", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= 600:
        raise ApiError(400, "'timeout' must be seconds between 0 and 600")
    wanted = state.lower()

    def seen() -> list[str]:
        return [p.group_state(group) for p in server.plans().values()]

    states = seen()
    with trio.move_on_after(timeout):
        while wanted not in (s.lower() for s in states):
            await trio.sleep(0.02)
            states = seen()
        return {"group": group, "state": next(s for s in states if s.lower() == wanted)}
    known = [s for s in states if s != "Dead"] or ["Dead"]
    raise ApiError(504, f"group {group!r} did not reach {state} within {timeout} s (it is {known[0]})")


async def _cluster(server: Any, op: str, body: dict[str, Any]) -> Any:
    control = server.control
    try:
        if op in ("stop", "start", "restart"):
            await getattr(control, f"{op}_broker")(_int(body, "broker"))
        elif op == "move-leader":
            await control.move_leader(_str(body, "topic"), _int(body, "partition"), _int(body, "broker"))
        elif op == "set-isr":
            isr = body.get("isr")
            if not isinstance(isr, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in isr):
                raise ApiError(400, "'isr' must be a list of node ids")
            await control.set_isr(_str(body, "topic"), _int(body, "partition"), isr)
        elif op == "move-coordinator":
            kind = _str(body, "kind")
            if kind not in ("group", "transaction"):
                raise ApiError(400, "'kind' must be \"group\" or \"transaction\"")
            await control.move_coordinator(kind, _str(body, "key"), _int(body, "broker"))
        else:
            raise ApiError(404, f"no cluster operation {op!r}")
    except ClusterOpError as exc:
        raise ApiError(409, str(exc)) from None
    return {"ok": True, "cluster": await control.describe()}


def _faults_view(server: Any) -> dict[str, Any]:
    plans = server.plans()
    return {"brokers": [plans[k].describe() for k in sorted(plans)]}


async def dispatch(server: Any, req: Request) -> Any:
    parts = req.parts
    if not parts or parts[0] != "v1" or len(parts) < 2:
        raise ApiError(404, f"no such endpoint: {req.path} (see GET /v1/describe)")
    if req.method in ("GET", "HEAD"):
        if parts[1:] == ["describe"]:
            return {"cluster": await server.control.describe(), "faults": _faults_view(server)}
        if parts[1:] == ["faults"]:
            return _faults_view(server)
        if len(parts) == 3 and parts[1] in ("faults", "cluster", "groups"):
            raise ApiError(405, f"POST to {req.path}")
        raise ApiError(404, f"no such endpoint: {req.path}")
    if req.method != "POST":
        raise ApiError(405, "GET to read, POST to change")
    if len(parts) != 3:
        raise ApiError(404, f"no such endpoint: {req.path}")
    body = req.json()
    if parts[1] == "faults":
        return await _faults(server, parts[2], body)
    if parts[1] == "cluster":
        return await _cluster(server, parts[2], body)
    if parts[1:] == ["groups", "wait"]:
        return await _wait_group(server, body)
    raise ApiError(404, f"no such endpoint: {req.path}")
