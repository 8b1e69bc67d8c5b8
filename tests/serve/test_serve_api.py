"""The HTTP API, through an HTTP client, with the model-free colour captioner as the test double."""

from __future__ import annotations

import asyncio
import threading

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from serve_helpers import png_bytes, png_with_header_size, solid

from prh.errors import InputError
from prh.serve.app import create_app
from prh.serve.colour import PALETTE, ColourCaptioner


def upload(client: TestClient, data: bytes, name: str = "x.png", field: str = "image"):
    return client.post("/api/caption", files={field: (name, data, "application/octet-stream")})


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(ColourCaptioner()))


def reference_scores(img: np.ndarray) -> dict[str, float]:
    """Slow obvious reference: mean colour by a Python loop, then ColourCaptioner's formula."""
    h, w, _ = img.shape
    total = [0.0, 0.0, 0.0]
    for y in range(h):
        for x in range(w):
            for c in range(3):
                total[c] += float(img[y, x, c])
    mean = [t / (h * w) for t in total]
    out = {}
    for name, rgb in PALETTE.items():
        d = sum((mean[c] - rgb[c]) ** 2 for c in range(3)) ** 0.5
        out[f"a mostly {name} picture"] = 1.0 - d / (255.0 * 3**0.5)
    return out


def test_caption_matches_a_reference_computation(client):
    rng = np.random.default_rng(0)
    img = np.clip(rng.normal((40, 70, 210), 30, size=(20, 24, 3)), 0, 255).astype(np.uint8)
    r = upload(client, png_bytes(img))
    assert r.status_code == 200, r.text
    body = r.json()
    ref = reference_scores(img)
    best = sorted(ref, key=ref.get, reverse=True)[:5]
    assert body["caption"] == best[0] == "a mostly blue picture"
    assert [n["caption"] for n in body["nearest"]] == best
    for n in body["nearest"]:
        assert n["score"] == pytest.approx(ref[n["caption"]], abs=1e-9)
    scores = [n["score"] for n in body["nearest"]]
    assert scores == sorted(scores, reverse=True)
    assert body["seconds"] >= 0 and body["size"] == [24, 20]


def test_different_images_get_different_captions(client):
    red = upload(client, png_bytes(solid(PALETTE["red"]))).json()["caption"]
    yellow = upload(client, png_bytes(solid(PALETTE["yellow"]), "JPEG")).json()["caption"]
    assert (red, yellow) == ("a mostly red picture", "a mostly yellow picture")


def test_upload_over_the_limit_by_content_length_is_413():
    app = create_app(ColourCaptioner(), max_upload_bytes=1000)
    c = TestClient(app)
    r = upload(c, b"\0" * (70 * 1024))  # above limit + multipart slack
    assert r.status_code == 413
    assert "larger than the limit of 1000 bytes" in r.json()["error"]
    # The file itself over the limit, envelope under the slack: still 413.
    r = upload(c, png_bytes(np.random.default_rng(0).integers(0, 256, (40, 40, 3), np.uint8)))
    assert r.status_code == 413
    assert upload(c, png_bytes(solid((0, 0, 0), (4, 4)))).status_code == 200


def test_streamed_body_without_content_length_is_counted():
    c = TestClient(create_app(ColourCaptioner(), max_upload_bytes=1000))
    boundary = "b0undary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="x.png"\r\n'
        "Content-Type: image/png\r\n\r\n"
    ).encode()

    def chunks():
        yield head
        for _ in range(200):  # 200 KB, no Content-Length header (chunked)
            yield b"\0" * 1024
        yield f"\r\n--{boundary}--\r\n".encode()

    r = c.post(
        "/api/caption",
        content=chunks(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert r.status_code == 413, r.text
    assert "larger than the limit" in r.json()["error"]


@pytest.mark.parametrize(
    ("make", "status", "message"),
    [
        (lambda: b"%PDF-1.4 not a picture" * 20, 415, "not an image"),
        (lambda: png_bytes(solid((5, 5, 5), (64, 64)), "JPEG")[:300], 400, "truncated or corrupt"),
        (lambda: png_with_header_size(40_000, 40_000), 413, "decompression bomb"),
        (lambda: b"", 400, "empty upload"),
    ],
    ids=["not-image", "truncated", "bomb", "empty"],
)
def test_bad_images_get_json_errors_and_the_server_keeps_serving(client, make, status, message):
    r = upload(client, make())
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json")
    assert message in r.json()["error"]
    ok = upload(client, png_bytes(solid(PALETTE["green"])))
    assert ok.status_code == 200 and ok.json()["caption"] == "a mostly green picture"


def test_malformed_requests(client):
    r = client.post("/api/caption", content=b"raw bytes", headers={"content-type": "image/png"})
    assert r.status_code == 415 and "multipart/form-data" in r.json()["error"]
    r = upload(client, png_bytes(solid((0, 0, 0))), field="picture")
    assert r.status_code == 400 and "missing file field 'image'" in r.json()["error"]
    r = client.post("/api/caption", data={"image": "just text"}, files={"other": ("a", b"b")})
    assert r.status_code == 400 and "missing file field 'image'" in r.json()["error"]
    r = client.post(
        "/api/caption",
        content=b"--x\r\nbroken",
        headers={"content-type": "multipart/form-data; boundary=x"},
    )
    assert r.status_code == 400, r.text
    assert client.get("/api/caption").status_code == 405
    r = client.get("/no/such/page")
    assert r.status_code == 404 and r.json() == {"error": "Not Found"}


class _Failing:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def caption(self, image: np.ndarray):
        raise self.exc


def test_captioner_errors_are_json_and_do_not_stop_the_server():
    c = TestClient(create_app(_Failing(RuntimeError("boom"))), raise_server_exceptions=False)
    r = upload(c, png_bytes(solid((1, 1, 1))))
    assert r.status_code == 500 and r.json() == {"error": "captioning failed: RuntimeError"}
    c = TestClient(create_app(_Failing(InputError("image is too small: 1x1"))))
    r = upload(c, png_bytes(solid((1, 1, 1))))
    assert r.status_code == 422 and r.json() == {"error": "image is too small: 1x1"}
    assert c.get("/api/health").json()["queue"]["admitted"] == 0


class _Blocking(ColourCaptioner):
    """Waits on an event inside the worker thread, so a test can hold a request in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def caption(self, image: np.ndarray):
        self.entered.set()
        assert self.release.wait(10), "test never released the captioner"
        return super().caption(image)


def test_loop_stays_free_and_the_queue_is_bounded():
    cap = _Blocking()
    app = create_app(cap, max_queue=2, workers=1)
    data = png_bytes(solid(PALETTE["orange"]))

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            files = {"image": ("x.png", data, "image/png")}
            first = asyncio.create_task(c.post("/api/caption", files=files))
            await asyncio.to_thread(cap.entered.wait, 5)
            second = asyncio.create_task(c.post("/api/caption", files=files))
            while app.state.gate.admitted < 2:  # the second waits for the worker slot
                await asyncio.sleep(0.01)
            # The event loop still answers while a caption runs in a thread.
            h = await asyncio.wait_for(c.get("/api/health"), 2)
            assert h.json()["queue"] == {"admitted": 2, "max": 2, "workers": 1}
            third = await asyncio.wait_for(c.post("/api/caption", files=files), 2)
            assert third.status_code == 503
            assert "server busy" in third.json()["error"] and third.headers["retry-after"] == "1"
            cap.release.set()
            r1, r2 = await asyncio.wait_for(asyncio.gather(first, second), 10)
            assert r1.status_code == r2.status_code == 200
            assert r1.json()["caption"] == "a mostly orange picture"
            assert r2.json()["queue_seconds"] > 0
        assert app.state.gate.admitted == 0

    asyncio.run(scenario())


def test_run_info_and_whitelisted_plots(run_dir):
    c = TestClient(create_app(ColourCaptioner(), run_dir=run_dir))
    info = c.get("/api/run").json()
    assert info["run"] == "demo-run"
    assert info["alignment"]["good"] == 0.31 and info["alignment"]["minilm"]["score"] == 0.22
    assert info["alignment"]["random-init"] is None  # NaN is not JSON
    assert info["plots"] == ["bound.png", "alignment.png"]  # bound first; no symlink, no .txt
    r = c.get("/api/plots/bound.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.content == (run_dir / "bound.png").read_bytes()
    assert c.get("/api/plots/alignment.png").status_code == 200
    for bad in ["leak.png", "notes.txt", "summary.json", "..%2Fsummary.json", "%2E%2E%2Fbound.png"]:
        r = c.get(f"/api/plots/{bad}")
        assert r.status_code == 404, bad
        assert "error" in r.json()
    assert c.get("/api/plots/../../etc/passwd").status_code == 404
    assert c.get("/static/../app.py").status_code == 404
    assert c.get("/api/health").json()["run"] == "demo-run"


def test_without_a_run_the_page_still_works(client):
    assert client.get("/api/run").json() == {
        "run": None,
        "alignment": None,
        "plots": [],
        "summary": {},
    }
    page = client.get("/")
    assert page.status_code == 200 and 'id="caption"' in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # no CDN, nothing off-origin
    js = client.get("/static/app.js")
    assert js.status_code == 200 and "/api/caption" in js.text
    assert client.get("/static/style.css").status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and page.headers["x-content-type-options"] == "nosniff"


def test_bad_run_folders_are_clear(tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        create_app(ColourCaptioner(), run_dir=tmp_path / "missing")
    (tmp_path / "summary.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        create_app(ColourCaptioner(), run_dir=tmp_path)
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        create_app(ColourCaptioner(), run_dir=tmp_path)
    with pytest.raises(InputError, match="must be >= 1"):
        create_app(ColourCaptioner(), max_queue=0)


@pytest.mark.parametrize("seed", ["", "abc", "-1", "1.5", "2147483648", "9" * 40, "0x10"])
def test_scene_seed_is_validated(client, seed):
    r = client.get("/api/scene", params={"seed": seed})
    assert r.status_code == 400
    assert "seed" in r.json()["error"]
    assert client.get("/api/scene/info", params={"seed": seed}).status_code == 400


def test_scene_is_a_deterministic_png_of_a_held_out_scene(client):
    import prh.world as world

    r1 = client.get("/api/scene", params={"seed": 7})
    assert r1.status_code == 200 and r1.headers["content-type"] == "image/png"
    assert client.get("/api/scene", params={"seed": 7}).content == r1.content
    assert client.get("/api/scene", params={"seed": 8}).content != r1.content
    w = world.CaveWorld(world.WorldConfig(seed=0))
    info = client.get("/api/scene/info", params={"seed": 7}).json()
    assert info["scene"] in set(w.split("test").tolist())
    expected = w.render(info["scene"], 7, 224)
    r = upload(client, r1.content)  # the scene captions like any upload
    assert r.status_code == 200 and r.json()["size"] == [expected.shape[1], expected.shape[0]]


def test_client_that_disconnects_mid_upload_gets_a_json_answer():
    app = create_app(ColourCaptioner())
    sent: list[dict] = []
    chunks = [
        {
            "type": "http.request",
            "body": b"--x\r\nContent-Disposition: form-data",
            "more_body": True,
        },
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict:
        return chunks.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/caption",
        "raw_path": b"/api/caption",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"multipart/form-data; boundary=x")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    assert b"client went away" in sent[1]["body"]
    assert app.state.gate.admitted == 0


@pytest.mark.slow
def test_real_captioner_through_the_api_equals_a_direct_call(caption_run):
    from prh.caption import load_captioner
    from prh.imageio import decode_image
    from prh.serve.runinfo import load_run_captioner, run_world_seed
    from prh.serve.scenes import SceneSource

    assert run_world_seed(caption_run) == 3
    captioner = load_run_captioner(caption_run)
    scenes = SceneSource(world_seed=3)
    c = TestClient(create_app(captioner, run_dir=caption_run, scenes=scenes))
    direct = load_captioner(caption_run)  # a second, independent load
    for seed in (0, 1):
        png = c.get("/api/scene", params={"seed": seed}).content
        body = upload(c, png).json()
        want = direct.caption(decode_image(png))
        assert body["caption"] == want.caption and body["caption"].strip()
        assert [n["caption"] for n in body["nearest"]] == [t for t, _ in want.nearest[:5]]
        got = [n["score"] for n in body["nearest"]]
        assert got == pytest.approx([s for _, s in want.nearest[:5]], abs=1e-5)
        assert got == sorted(got, reverse=True) and body["seconds"] > 0
    assert c.get("/api/run").json()["run"] == caption_run.name
