"""Importing trio without the work its import does for features a broker may never use.

:func:`import_trio` imports trio as ``import trio`` would, less three costs of trio's import itself:

- **The subprocess.** trio's thread cache (``trio._core._thread_cache``) looks for ``pthread_setname_np`` when it
  is imported, through ``ctypes.util.find_library("pthread")``, which on Linux runs ``/sbin/ldconfig -p`` in a
  subprocess and parses its listing of every library on the system: 1-8 ms of a broker's start here, more on a
  loaded machine, every time, for one answer that never changes. That question is answered by the dynamic
  loader itself: ``libpthread.so.0`` when it loads (every glibc has it; since glibc 2.34 it is a stub whose
  symbols live in libc, which is where ``ldconfig`` would have pointed too), else the usual search.
  ``ctypes.util.find_library`` is itself again once trio is imported.
- **OpenSSL and IDNA.** trio's modules import ``ssl`` (for ``trio.SSLStream`` and the SSL helpers), ``hmac``
  (DTLS cookies, with hashlib) and ``idna`` (non-ASCII host names) at their top, and use them only inside
  functions. Loading OpenSSL's two libraries, ``ssl``'s enums, hashlib and idna's tables was ~6 % of the
  instructions of a start (~35 M of ~615 M) for a broker with PLAINTEXT listeners, which never calls those
  functions. While trio is
  imported each of the three names is a stand-in module (:class:`_OnFirstUse`); trio's modules keep the
  stand-in as their global, and ``sys.modules`` is left as it was, so anyone else's ``import ssl`` is the real
  import, as before. A stand-in imports the real module the first time one of its attributes is read (trio
  making a TLS stream, say) and passes that and every later read to it: the same classes, functions and
  exceptions as the real module, only later.
- **Compiling attrs' generated methods.** trio's classes are attrs classes, whose methods attrs writes as source
  and compiles in every process: that is compiled once and cached like bytecode (:mod:`kafkalite.runtime.codecache`).

``kafkalite serve`` calls it before anything imports trio (an embedded broker leaves its host's imports alone).
"""
from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

from kafkalite.runtime.codecache import cached_compile

# imported by trio's modules at their top, used only inside functions that a PLAINTEXT broker never calls
DEFERRED = ("ssl", "hmac", "idna")


class _OnFirstUse(ModuleType):
    """Stands in for module ``name`` in the modules that imported it while :func:`import_trio` ran: the real module
    is imported when an attribute is first read (``ModuleType`` finds ``__name__``/``__spec__`` in the stand-in's
    own dict, so ``import`` itself reads nothing through here)."""

    def __getattr__(self, attr: str) -> Any:
        real = self.__dict__.get("_real_module")
        if real is None:
            name = self.__name__
            if sys.modules.get(name) is self:   # read while trio is still being imported: the real one replaces us
                del sys.modules[name]
            real = self.__dict__["_real_module"] = importlib.import_module(name)
        return getattr(real, attr)


def _stand_in(name: str) -> _OnFirstUse:
    module = _OnFirstUse(name)
    # ``import name`` asks the module in sys.modules whether it is still initializing (``__spec__._initializing``)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return module


def import_trio() -> ModuleType:
    """``import trio``, without ``ldconfig -p``, without OpenSSL and idna until used, and with attrs' generated
    methods compiled once (see the module doc)."""
    if "trio" in sys.modules:
        return sys.modules["trio"]
    import ctypes
    import ctypes.util

    search = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        if name == "pthread" and sys.platform.startswith("linux"):
            try:
                ctypes.CDLL("libpthread.so.0")
            except OSError:   # no glibc (musl): the usual search, as trio would do
                return search(name)
            return "libpthread.so.0"
        return search(name)

    stand_ins = {name: _stand_in(name) for name in DEFERRED if name not in sys.modules}
    sys.modules.update(stand_ins)
    ctypes.util.find_library = find_library
    try:
        with cached_compile("trio_attrs"):   # attrs' generated methods of trio's classes, compiled once
            import trio
    finally:
        ctypes.util.find_library = search
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return trio
