"""report.html, compare.html and paper.html in a real browser: every image shows and the page
asks for nothing outside itself. Headless Chromium, driven over the DevTools protocol (aiohttp's
websocket client); skipped where no Chromium is installed (``apt-get install chromium``)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from berth.cli import main
from tests.scenarios.test_simulate import CLUSTER, WORKLOAD, simulate

BROWSER = next(
    (path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None
)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed")
#: Flags for a browser that makes no request of its own (updates, sync, field trials).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
#: How the page reports images that did not load.
BROKEN_IMAGES = (
    "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length"
)


class DevTools:
    """The few DevTools protocol calls the test needs, over one websocket."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, session: str | None = None, **params: Any) -> dict:
        ident = next(self.ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        await self.ws.send_str(json.dumps(message))
        while True:
            reply = json.loads((await self.ws.receive(timeout=30)).data)
            if reply.get("id") == ident:
                assert "error" not in reply, reply
                return reply.get("result", {})
            self.events.append(reply)

    async def until(self, method: str, timeout: float = 30.0) -> None:
        if any(e.get("method") == method for e in self.events):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = json.loads((await self.ws.receive(timeout=timeout)).data)
            self.events.append(event)
            if event.get("method") == method:
                return
        raise TimeoutError(method)


async def _inspect(endpoint: str, url: str, screenshot: Path) -> dict[str, Any]:
    import aiohttp

    async with aiohttp.ClientSession() as client, client.ws_connect(endpoint, max_msg_size=0) as ws:
        tools = DevTools(ws)
        target = await tools.call("Target.createTarget", url="about:blank")
        attached = await tools.call(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )
        session = attached["sessionId"]
        await tools.call("Network.enable", session)
        await tools.call("Page.enable", session)
        await tools.call(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=1200,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        await tools.call("Page.navigate", session, url=url)
        await tools.until("Page.loadEventFired")
        broken = await tools.call(
            "Runtime.evaluate", session, expression=BROKEN_IMAGES, returnByValue=True
        )
        images = await tools.call(
            "Runtime.evaluate", session, expression="document.images.length", returnByValue=True
        )
        shot = await tools.call(
            "Page.captureScreenshot", session, format="png", captureBeyondViewport=True
        )
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        requested = [
            e["params"]["request"]["url"]
            for e in tools.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        return {
            "broken": broken["result"]["value"],
            "images": images["result"]["value"],
            "requested": requested,
        }


def _load(page: Path, profile: Path, screenshot: Path) -> dict[str, Any]:
    """Open ``page`` in a fresh headless Chromium and report what it loaded."""
    assert BROWSER is not None
    process = subprocess.Popen(
        [BROWSER, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.is_file() or len(port_file.read_text().split()) < 2:
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            assert process.poll() is None, "Chromium exited"
            time.sleep(0.1)
        port, path = port_file.read_text().split()[:2]
        endpoint = f"ws://127.0.0.1:{port}{path}"
        return asyncio.run(_inspect(endpoint, page.as_uri(), screenshot))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _check(page: Path, tmp_path: Path) -> None:
    screenshot = tmp_path / f"{page.stem}.png"
    seen = _load(page, tmp_path / f"profile-{page.stem}", screenshot)
    assert seen["images"] >= 3
    assert seen["broken"] == 0
    # The page itself, and nothing else: no stylesheet, font, image or script from anywhere.
    assert [url for url in seen["requested"] if not url.startswith("data:")] == [page.as_uri()]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_loads_whole_without_any_request(tmp_path):
    out = tmp_path / "run"
    assert simulate(out, "--explain", "web-0") == 0
    for png in out.glob("*.png"):  # the page must not need the files beside it
        png.unlink()
    _check(out / "report.html", tmp_path)


def test_compare_page_loads_whole_without_any_request(tmp_path):
    out = tmp_path / "cmp"
    argv = ["compare", "--cluster", str(CLUSTER), "--workload", str(WORKLOAD)]
    argv += ["--config", "default", "--config", "default", "--jobs", "1", "--out", str(out)]
    assert main(argv) == 0
    for png in out.glob("*.png"):
        png.unlink()
    _check(out / "compare.html", tmp_path)
    _check(out / "paper.html", tmp_path)
