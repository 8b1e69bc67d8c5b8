"""The server's edges (issue 36): typed query values, every error a JSON body with the security
headers, uploads refused before they are read when the queue is full, a 0x0 image a 400, and a
stalled connection closed within its header timeout."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from serve_helpers import png_bytes, png_with_header_size, solid

from prh.serve.app import SECURITY_HEADERS, create_app
from prh.serve.colour import PALETTE, ColourCaptioner
from prh.serve.scenes import SceneSource


@pytest.mark.parametrize("seed", ["²", "١٢", "٣", "1²", "𝟙"], ids=["super", "arabic", "arabic3",
                                                                   "mixed", "math"])  # fmt: skip
def test_unicode_digits_are_a_400_not_a_500(seed):
    client = TestClient(create_app(ColourCaptioner()), raise_server_exceptions=False)
    for path in ("/api/scene", "/api/scene/info"):
        r = client.get(path, params={"seed": seed})
        assert r.status_code == 400, r.text
        assert r.headers["content-type"].startswith("application/json")
        assert "seed must be an integer" in r.json()["error"]


def test_an_unexpected_failure_is_json_with_the_security_headers():
    """A scene source whose world is unknown (a run's manifest naming one) used to answer
    500 text/plain from Starlette's outer middleware, without the security headers."""
    app = create_app(ColourCaptioner(), scenes=SceneSource(world="atlantis"))
    client = TestClient(app, raise_server_exceptions=False)
    r = client.get("/api/scene", params={"seed": "3"})
    assert r.status_code == 500 and r.headers["content-type"].startswith("application/json")
    assert r.json()["error"].startswith("internal error: ")
    for k, v in SECURITY_HEADERS.items():
        assert r.headers[k] == v
    ok = client.get("/api/health")  # still serving, and ordinary answers carry them once
    assert ok.status_code == 200 and ok.headers["x-content-type-options"] == "nosniff"
    assert ok.headers.get_list("content-security-policy") == [SECURITY_HEADERS[
        "content-security-policy"]]  # fmt: skip


def _zero_png() -> bytes:
    return png_with_header_size(0, 0)


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        (_zero_png(), 400, "image has size 0x0, expected at least 1x1"),
        (png_with_header_size(5, 0), 400, "image has size 5x0"),
        (b"\xff\xd8\xff" + b"\x00" * 50, 400, "JPEG data with a header that cannot be read"),
        (b"%PDF-1.4 not a picture" * 20, 415, "not an image"),
    ],
    ids=["0x0 png", "5x0 png", "broken jpeg", "pdf"],
)
def test_a_bad_image_of_an_allowed_format_is_400_and_another_format_415(data, status, message):
    client = TestClient(create_app(ColourCaptioner()))
    r = client.post("/api/caption", files={"image": ("x.png", data, "image/png")})
    assert r.status_code == status and message in r.json()["error"], r.text


def test_uploads_are_refused_before_they_are_read_when_the_queue_is_full():
    """A slow upload holds its place in the queue while its body streams in: with
    --max-queue 1 a second upload is a 503 before any of its bytes is read."""
    app = create_app(ColourCaptioner(), max_queue=1)
    data = png_bytes(solid(PALETTE["green"]))
    boundary = "b0undary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"x.png\""
            f"\r\nContent-Type: image/png\r\n\r\n").encode()  # fmt: skip
    tail = f"\r\n--{boundary}--\r\n".encode()
    ctype = {"content-type": f"multipart/form-data; boundary={boundary}"}
    go, read = asyncio.Event(), []

    async def slow_body():
        yield head
        await go.wait()
        yield data + tail

    async def counted_body():
        read.append(True)  # the server pulled a chunk of the second body
        yield head + data + tail

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            first = asyncio.create_task(c.post("/api/caption", content=slow_body(), headers=ctype))
            while app.state.gate.admitted < 1:
                await asyncio.sleep(0.01)
            second = await c.post("/api/caption", content=counted_body(), headers=ctype)
            assert second.status_code == 503 and "server busy" in second.json()["error"]
            go.set()
            r = await asyncio.wait_for(first, 10)
            assert r.status_code == 200 and r.json()["caption"] == "a mostly green picture"
        assert app.state.gate.admitted == 0

    asyncio.run(scenario())
    assert read == []  # no byte of the refused upload was read


@pytest.fixture
def live_server():
    """``prh serve``'s app under uvicorn with :func:`prh.serve.limits.uvicorn_limits` (a
    0.5 s header timeout), on a free loopback port."""
    import uvicorn

    from prh.serve.limits import uvicorn_limits

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(ColourCaptioner()), host="127.0.0.1", port=port,
                            log_level="error", **uvicorn_limits(header_timeout=0.5))  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield port
    server.should_exit = True
    thread.join(10)


def test_a_stalled_connection_is_closed_within_its_header_timeout(live_server):
    stalled = [socket.create_connection(("127.0.0.1", live_server)) for _ in range(3)]
    stalled[1].sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")  # head never finished
    t0 = time.monotonic()
    for s in stalled:
        s.settimeout(5)
        assert s.recv(1024) == b""  # closed by the server, not by our timeout
        s.close()
    assert time.monotonic() - t0 < 3
    r = httpx.get(f"http://127.0.0.1:{live_server}/api/health", timeout=5)  # still serving
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_serve_refuses_a_run_whose_manifest_names_an_unknown_world(tmp_path, bad_input):
    import json

    run = tmp_path / "run"
    (run / "caption").mkdir(parents=True)
    (run / "caption" / "caption.json").write_text(json.dumps({"world": {"name": "atlantis",
                                                                        "seed": 0}}))  # fmt: skip
    argv = ["serve", "--run", run, "--captioner", "colour", "--port", "1"]
    bad_input(argv, match=r"--run .*run: its manifest names world 'atlantis'; expected one of ")
