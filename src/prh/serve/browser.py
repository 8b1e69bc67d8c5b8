"""Drive the page for tests, the screenshot and the load test: a loopback server in a thread, and
Debian's Chromium through Playwright (never a downloaded browser).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prh.errors import PrhError

CHROMIUM = Path("/usr/bin/chromium")
# Headless, no sandbox (containers run as root), and nothing that phones home.
CHROMIUM_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", timeout: float = 15.0) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port in a daemon thread; yield its base URL.

    The socket is bound here (port 0, so the OS picks a free one) and handed to uvicorn, so there
    is no race between choosing a port and listening on it. The server stops on exit.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise PrhError(f"uvicorn did not start on {host}:{port} within {timeout:.0f} s")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


def launch_chromium(playwright: Any) -> Any:
    """Launch ``/usr/bin/chromium`` headless through a started ``sync_playwright()`` object."""
    if not CHROMIUM.exists():
        raise PrhError(
            f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
        )
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS)
    )


def caption_in_page(
    base_url: str,
    image: Path,
    screenshot: Path | None = None,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """Open the page, upload ``image`` through the file picker, wait for the caption, read it.

    Returns
    -------
    dict
        ``{"caption", "nearest": [str], "alignment": [[name, value]], "plot_loaded": bool,
        "error": str}`` as shown on the page.
    """
    from playwright.sync_api import sync_playwright

    ms = timeout_s * 1000
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(ms)
            blocked: list[str] = []
            # Offline by construction: any request that leaves the server is recorded and refused.
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(base_url)
                    else (blocked.append(route.request.url), route.abort())
                ),
            )
            page.goto(base_url + "/")
            page.wait_for_function("() => document.querySelector('#health').textContent.length > 0")
            page.set_input_files("#file", str(image))
            page.wait_for_function(
                "() => document.querySelectorAll('#nearest li').length > 0 "
                "|| !document.querySelector('#error').hidden"
            )
            # #health is filled after /api/run has been rendered; then wait for the plot, if any.
            page.wait_for_function(
                "() => { const f = document.querySelector('#plot-figure');"
                " const p = document.querySelector('#plot');"
                " return f.hidden || (p.complete && p.naturalWidth > 0); }"
            )
            result = {
                "caption": page.inner_text("#caption"),
                "nearest": page.locator("#nearest li .near-caption").all_inner_texts(),
                "scores": page.locator("#nearest li .score").all_inner_texts(),
                "alignment": [
                    row.locator("td").all_inner_texts()
                    for row in page.locator("#alignment tr").all()
                ],
                "plot_loaded": page.evaluate(
                    "() => { const p = document.querySelector('#plot');"
                    " return !document.querySelector('#plot-figure').hidden"
                    " && p.complete && p.naturalWidth > 0; }"
                ),
                "error": page.inner_text("#error") if page.is_visible("#error") else "",
                "blocked": blocked,
            }
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=True)
            return result
        finally:
            browser.close()
