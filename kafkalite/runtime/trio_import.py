"""Importing trio without the subprocess it starts.

trio's thread cache (``trio._core._thread_cache``) looks for ``pthread_setname_np`` when it is imported, through
``ctypes.util.find_library("pthread")``, which on Linux runs ``/sbin/ldconfig -p`` in a subprocess and parses
its listing of every library on the system: 1-8 ms of a broker's start here, more on a loaded machine, every
time, for one answer that never changes. :func:`import_trio` imports trio with that question answered by the
dynamic loader itself: ``libpthread.so.0`` when it loads (every glibc has it; since glibc 2.34 it is a stub whose
symbols live in libc, which is where ``ldconfig`` would have pointed too), else the usual search. Nothing else
changes, and ``ctypes.util.find_library`` is itself again once trio is imported.

``kafkalite serve`` calls it before anything imports trio (an embedded broker leaves its host's imports alone).
"""
from __future__ import annotations

import sys
from types import ModuleType


def import_trio() -> ModuleType:
    """``import trio``, answering its ``find_library("pthread")`` without a subprocess (see the module doc)."""
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

    ctypes.util.find_library = find_library
    try:
        import trio
    finally:
        ctypes.util.find_library = search
    return trio
