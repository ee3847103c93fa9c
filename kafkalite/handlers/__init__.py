"""One module per Kafka API; ``load_all()`` imports them all so their ``@handler`` decorators register."""
from __future__ import annotations

import importlib

_loaded = False


def load_all() -> None:
    """Import every module of this package (idempotent); a module that fails to import raises (the broker itself
    imports handler modules one by one on first use: see ``registry.lookup``)."""
    global _loaded
    if _loaded:
        return
    import pkgutil  # load_all only (tests, tools): a broker's start, which imports this package, does not need it

    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_") or mod.name == "registry":
            continue
        importlib.import_module(f"{__name__}.{mod.name}")
    _loaded = True
