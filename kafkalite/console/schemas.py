"""The console's view of the built-in schema registry (``serve --schema-registry``): its subjects with their
latest version, and one subject's versions with their schemas, read in-process from the registry's memory
(what ``_schemas`` holds), never over HTTP.

    /api/schemas               {"enabled", "url", "subjects": [{subject, versions, latest, id, type,
                                compatibility, mode, deleted}]}
    /api/schemas/<subject>     {"subject", "compatibility", "mode", "versions": [{version, id, type, deleted,
                                references, schema}]} (soft-deleted versions included and marked)

At most ``MAX_SUBJECTS`` subjects are listed (the count is always given); a schema longer than
``MAX_SCHEMA_SHOWN`` characters is cut (and says so).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalite.httpd.server import HttpError as ApiError
from kafkalite.httpd.server import public_url

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

MAX_SUBJECTS = 5_000
MAX_SCHEMA_SHOWN = 256 * 1024


def _service(state: BrokerState) -> Any:
    service = state.schema_registry
    if service is None or not service.loaded.is_set():
        return None
    return service


def subjects(state: BrokerState) -> dict[str, Any]:
    from kafkalite.registry import bound_address  # the registry room, imported only when asked about

    service = _service(state)
    if service is None:
        return {"enabled": state.schema_registry is not None, "url": None, "subjects": [], "count": 0}
    reg = service.registry
    bound = bound_address(state.config.log_dir)
    names = reg.subjects(deleted=True)
    out = []
    for name in names[:MAX_SUBJECTS]:
        versions = reg.all_versions(name)
        live = [v for v in versions if not v.deleted]
        latest = (live or versions)[-1]
        out.append({"subject": name, "versions": len(live), "latest": latest.version, "id": latest.id,
                    "type": latest.schema_type, "deleted": not live,
                    "compatibility": reg.config_in_scope(name).get("compatibilityLevel", "BACKWARD"),
                    "mode": reg.mode_in_scope(name)})
    return {"enabled": True, "url": public_url(bound, "") if bound else None, "subjects": out,
            "count": len(names)}


def subject(state: BrokerState, name: str) -> dict[str, Any]:
    service = _service(state)
    if service is None:
        raise ApiError(404, "the schema registry is off (serve --schema-registry) or still loading")
    reg = service.registry
    versions = reg.all_versions(name)
    if not versions:
        raise ApiError(404, f"unknown subject {name!r}")
    shown = []
    for v in versions:
        text = v.schema if len(v.schema) <= MAX_SCHEMA_SHOWN else v.schema[:MAX_SCHEMA_SHOWN] + "\n… (cut)"
        shown.append({"version": v.version, "id": v.id, "type": v.schema_type, "deleted": v.deleted,
                      "references": v.references, "schema": text})
    return {"subject": name, "compatibility": reg.config_in_scope(name).get("compatibilityLevel", "BACKWARD"),
            "mode": reg.mode_in_scope(name), "versions": shown}
