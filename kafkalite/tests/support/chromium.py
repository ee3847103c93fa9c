"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: the browser
reads commands from fd 3 and writes answers and events to fd 4, each a JSON text ended by a NUL byte), so the
console's browser tests need Debian's ``chromium`` and nothing else: no websocket client, no Playwright.

    with Chromium.launch() as browser:
        page = browser.new_page()
        page.goto("http://127.0.0.1:8080/#/topics")
        page.wait_for("document.querySelector('#topics') !== null")
        page.screenshot(path)

``need_chromium()`` finds the browser (``KAFKALITE_CHROMIUM`` or ``chromium`` on PATH): a loud skip without
it, a failure under ``CI=true``. Every wait has a generous deadline that only detects a hang.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from kafkalite.tests.support.requires import chromium_path, require

DEADLINE_S = 30.0


def need_chromium() -> str:
    """The browser's path, or a loud skip (a failure under CI=true)."""
    require("chromium")
    exe = chromium_path()
    assert exe is not None
    return exe


class CdpError(Exception):
    pass


class Chromium:
    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int, profile: str) -> None:
        self.proc = proc
        self._out = to_browser
        self._in = from_browser
        self._profile = profile
        self._next_id = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True, name="cdp-reader")
        self._reader.start()

    @classmethod
    @contextmanager
    def launch(cls, exe: str | None = None) -> Iterator[Chromium]:
        exe = exe or need_chromium()
        profile = tempfile.mkdtemp(prefix="kafkalite-chromium-")
        cmd_r, cmd_w = os.pipe()     # we write commands -> the browser's fd 3
        ev_r, ev_w = os.pipe()       # the browser's fd 4 -> we read

        def wire_fds() -> None:      # in the child, before exec
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)

        args = [exe, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--mute-audio",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--password-store=basic", f"--user-data-dir={profile}", "about:blank"]
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, pass_fds=(3, 4), preexec_fn=wire_fds)
        os.close(cmd_r)
        os.close(ev_w)
        browser = cls(proc, cmd_w, ev_r, profile)
        try:
            yield browser
        finally:
            browser.close()

    def close(self) -> None:
        with suppress(Exception):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self._out, self._in):
            with suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._answers[-1] = {"error": {"message": "browser closed"}}
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._answers[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = DEADLINE_S) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        with self._lock:
            while data:
                data = data[os.write(self._out, data):]
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._answers:
                if -1 in self._answers:
                    raise CdpError(f"{method}: the browser closed")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CdpError(f"{method}: no answer in {timeout} s")
                self._cond.wait(left)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error']}")
        return answer.get("result", {})  # type: ignore[no-any-return]

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


class Page:
    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, self.session)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited); page errors raise."""
        r = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in r:
            raise CdpError(f"{expression[:80]}: {r['exceptionDetails'].get('exception', r['exceptionDetails'])}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = DEADLINE_S) -> Any:
        """Poll until ``expression`` is truthy (a deadline that only detects a hang); returns its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = self.eval(expression)
            except CdpError as exc:   # e.g. evaluated while the document is being replaced
                last = exc
            # JavaScript's truthiness: an element comes back as {} (by value), which is found
            if last not in (None, False, 0, "") and not isinstance(last, CdpError):
                return last
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression!r} (last: {last!r})")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def problems(self) -> list[str]:
        """Uncaught exceptions, console errors and CSP violations this page reported so far."""
        out = []
        for ev in list(self.browser.events):
            if ev.get("sessionId") != self.session:
                continue
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('exception', {}).get('description')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(f"console.error: {[a.get('value') for a in p.get('args', [])]}")
            elif (m == "Log.entryAdded" and p["entry"].get("level") == "error"
                  and p["entry"].get("source") != "network"):   # a 4xx the page shows is no problem
                out.append(f"log: {p['entry'].get('text')}")
        return out
