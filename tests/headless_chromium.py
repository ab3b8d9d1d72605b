"""Headless Chromium for the browser tests, driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
commands in on file descriptor 3, replies and events out on 4, each a JSON message ending in a NUL byte), with the
standard library only.

``with Browser() as b: page = b.open(path)`` loads a file and waits for its ``load`` event; ``page.evaluate(js)``
returns a JavaScript expression's value, ``page.pdf()`` the page printed to PDF (bytes), ``page.problems()`` the
console errors, uncaught exceptions and failed loads seen so far (console messages of level error or assert,
``Runtime.exceptionThrown``, log entries of level error).  :data:`CHROMIUM` is the browser found on ``PATH``
(Debian's package ``chromium``), or ``None``.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
#: the flags every start uses: no sandbox (containers), no GPU, no network chatter, a throw-away profile
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--remote-debugging-pipe")


class Browser:
    """One headless Chromium process; a context manager (closed on exit)."""

    def __init__(self, executable: str | None = None, timeout: float = 60.0) -> None:
        exe = executable or CHROMIUM
        if exe is None:
            raise RuntimeError("no Chromium on PATH (apt-get install chromium)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()

        def onto_3_and_4() -> None:  # in the child, before exec: the pipe ends where Chromium expects them
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        self._proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=onto_3_and_4, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(res_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    # ------------------------------------------------------------------ the protocol
    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if ready:
                chunk = os.read(self._res_r, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed its DevTools pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept in :attr:`events`)."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict:
        """The first event ``method`` of ``session`` (already arrived or the next to arrive)."""
        for k, e in enumerate(self.events):
            if e.get("method") == method and e.get("sessionId") == session:
                return self.events.pop(k)
        deadline = time.monotonic() + self.timeout
        while True:
            e = self._message(deadline)
            if e.get("method") == method and e.get("sessionId") == session:
                return e
            self.events.append(e)

    # ------------------------------------------------------------------ pages
    def open(self, path: Path, width: int = 1300, height: int = 900) -> "Page":
        """A new tab showing the file ``path`` at ``width`` x ``height`` CSS pixels, after its ``load`` event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(method, session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=session)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self._proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a browser that will not close is killed
            self._proc.kill()
            self._proc.wait(timeout=10)
        finally:
            os.close(self._cmd_w)
            os.close(self._res_r)
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Page:
    """A loaded tab of a :class:`Browser`."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (returned by value: numbers, strings, arrays, objects)."""
        r = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                   "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JavaScript raised: {r['exceptionDetails']}")
        return r["result"].get("value")

    def pdf(self) -> bytes:
        """The page printed to PDF (Chromium's defaults: US Letter, default margins, backgrounds off)."""
        return base64.b64decode(self.browser.send("Page.printToPDF", {}, session=self.session)["data"])

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads of this tab so far."""
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            p = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a)) for a in p.get("args", [])))
            elif e.get("method") == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url', '')})")
        return out


def pdf_pages(pdf: bytes) -> int:
    """The number of pages of a PDF (its ``/Type /Page`` objects)."""
    import re

    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))
