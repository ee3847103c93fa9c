"""A trio loop in a daemon thread, started and stopped from plain Python: what ``kafkalite.Broker``
(``kafkalite.embedded``) and ``kafkalite.Cluster`` (``kafkalite.cluster.api``) run their brokers on.

``start(main, timeout)`` starts the thread and waits until the loop's ``main(shutdown, ready)`` calls ``ready()`` (it is
serving) or ends; a failure in the loop is returned for the owner to report in its own words (the thread has
ended by then). ``stop()`` sets the ``shutdown`` event from outside the loop (if the loop still runs) and joins
the thread, so it returns once the loop has drained and closed. ``token`` is the loop's trio token while it
runs, for ``trio.from_thread`` calls into it (faults, cluster operations).

trio is imported only when the loop starts: ``import kafkalite`` stays cheap.
"""
from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

#: main(shutdown event, ready callback): serve until ``shutdown`` is set; call ``ready()`` once serving
Main = Callable[[Any, Callable[[], None]], Awaitable[None]]


class LoopThread:
    def __init__(self, name: str, what: str) -> None:
        self.name = name
        self.what = what                 # "broker" / "cluster": in the timeout message
        self.thread: threading.Thread | None = None
        self.token: Any = None           # trio.lowlevel.TrioToken while the loop runs
        self.shutdown: Any = None        # trio.Event: set to stop the loop
        self.error: BaseException | None = None
        self._ready = threading.Event()

    def start(self, main: Main, timeout: float) -> BaseException | None:
        """Start the loop running ``main`` and wait until it is ready (None) or has failed (the exception; the thread has
        ended). TimeoutError if it is still starting after ``timeout`` seconds: the thread is left running
        (it may be using its data dir) until ``stop()``, which waits for it."""
        self.thread = threading.Thread(target=self._run, args=(main,), name=self.name, daemon=True)
        self.thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"kafkalite {self.what} did not start in time")
        if self.error is not None:
            self.thread.join()
        return self.error

    def _run(self, main: Main) -> None:
        import trio

        async def run() -> None:
            self.token = trio.lowlevel.current_trio_token()
            self.shutdown = trio.Event()
            await main(self.shutdown, self._ready.set)

        try:
            trio.run(run)
        except BaseException as exc:  # reported by start()
            self.error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Ask the loop to shut down (if it still runs) and wait for its thread to end."""
        if self.thread is None:
            return
        if self.token is not None and self.shutdown is not None and self.thread.is_alive():
            import trio

            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self.shutdown.set, trio_token=self.token)
        self.thread.join()


class LoopOwner:
    """The life cycle ``kafkalite.Broker`` and ``kafkalite.Cluster`` share around their :class:`LoopThread`:
    ``start()`` (idempotent; a failed start removes a data dir made for it and raises the owner's
    ``_start_error``), ``stop()`` (idempotent; joins the loop, then removes that dir), the context manager, and
    ``_token`` / ``_thread`` for the code that calls into the loop (faults, cluster operations, the fuzz runner).
    An owner sets ``data_dir``, ``_own_dir``, ``_loop`` and ``startup_timeout`` and defines ``_serve`` (the
    loop's ``main``) and ``_start_error``."""

    data_dir: Path
    startup_timeout: float
    _own_dir: bool
    _loop: LoopThread
    _stopped = False

    async def _serve(self, shutdown: Any, ready: Callable[[], None]) -> None:
        raise NotImplementedError

    def _start_error(self, error: BaseException) -> Exception:
        raise NotImplementedError

    def start(self) -> Self:
        if self._loop.thread is not None:
            return self
        # TimeoutError if still starting (e.g. recovering a large log): the thread may be using the
        # directory, so it stays until stop(), which waits for the thread to end
        error = self._loop.start(self._serve, self.startup_timeout)
        if error is not None:
            self._stopped = True
            self._remove_own_dir()
            raise self._start_error(error) from error
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._loop.stop()
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    @property
    def _token(self) -> Any:
        """The loop's trio token while it runs (faults and cluster operations call into the loop with it)."""
        return self._loop.token

    @_token.setter
    def _token(self, token: Any) -> None:   # serve_cluster: a cluster run on the caller's own loop
        self._loop.token = token

    @property
    def _thread(self) -> threading.Thread | None:
        return self._loop.thread

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
