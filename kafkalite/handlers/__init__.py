"""One module per Kafka API; ``load_all()`` imports them all so their ``@handler`` decorators register."""
from __future__ import annotations

import importlib
import logging
import pkgutil

log = logging.getLogger(__name__)

_loaded = False


def load_all() -> None:
    """Import every module of this package (idempotent). A module that fails to import is logged and skipped,
    so one broken handler does not take the whole broker down."""
    global _loaded
    if _loaded:
        return
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_") or mod.name == "registry":
            continue
        try:
            importlib.import_module(f"{__name__}.{mod.name}")
        except Exception:
            log.exception("failed to load handler module %s", mod.name)
    _loaded = True
