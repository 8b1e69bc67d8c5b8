"""End to end: uvicorn on a loopback port, Debian's Chromium driving the page through Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_helpers import png_bytes, solid

from prh.serve.browser import CHROMIUM, caption_in_page, serve_in_thread
from prh.serve.colour import PALETTE, ColourCaptioner

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"{CHROMIUM} absent: `apt-get install chromium` (make test does it as root)",
    ),
]


def test_upload_an_image_and_read_its_caption_on_the_page(tmp_path: Path, run_dir: Path):
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (Python package)")
    from prh.serve.app import create_app

    image = tmp_path / "purple.png"
    image.write_bytes(png_bytes(solid(PALETTE["purple"], (160, 120))))
    shot = tmp_path / "serve.png"
    app = create_app(ColourCaptioner(), run_dir=run_dir)
    with serve_in_thread(app) as url:
        assert url.startswith("http://127.0.0.1:")
        page = caption_in_page(url, image, screenshot=shot)
    assert page["error"] == ""
    assert page["caption"] == "a mostly purple picture"
    assert len(page["nearest"]) == 5 and page["nearest"][0] == "a mostly purple picture"
    scores = [float(s) for s in page["scores"]]
    assert scores == sorted(scores, reverse=True) and scores[0] == pytest.approx(1.0, abs=1e-3)
    assert ["good", "0.310"] in page["alignment"]
    assert ["minilm", "0.220 [0.200, 0.240]"] in page["alignment"]
    assert page["plot_loaded"] is True
    assert page["blocked"] == []  # the page asked for nothing off the server
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_bad_file_then_random_scene_in_the_browser(tmp_path: Path):
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (Python package)")
    from playwright.sync_api import sync_playwright

    from prh.serve.app import create_app
    from prh.serve.browser import launch_chromium

    bad = tmp_path / "notes.png"
    bad.write_bytes(b"%PDF-1.4 this is not a picture" * 10)
    with serve_in_thread(create_app(ColourCaptioner())) as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(url + "/")
            page.set_input_files("#file", str(bad))
            page.wait_for_selector("#error:not([hidden])")
            assert "not an image" in page.inner_text("#error")
            assert page.inner_text("#caption") == "No caption."
            page.click("#random")  # the server kept serving: a generated scene captions
            page.wait_for_function("() => document.querySelectorAll('#nearest li').length === 5")
            page.wait_for_selector("#reference:not([hidden])")
            assert page.inner_text("#caption").startswith("a mostly ")
            assert page.is_hidden("#error")
            assert page.inner_text("#reference").startswith("Scene ")
            assert page.evaluate("() => document.querySelector('#preview').naturalWidth") == 224
        finally:
            browser.close()


def test_a_real_caption_run_in_the_browser(tmp_path: Path, caption_run: Path):
    """The run's own pipeline (vision encoder -> map -> text-only decoder) behind the page."""
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (Python package)")
    from prh.caption import load_captioner
    from prh.imageio import decode_image
    from prh.serve.app import create_app
    from prh.serve.scenes import SceneSource

    captioner = load_captioner(caption_run)
    scenes = SceneSource(world_seed=3)
    image = tmp_path / "scene.png"
    image.write_bytes(scenes.png(11))
    want = captioner.caption(decode_image(image.read_bytes()))
    app = create_app(captioner, run_dir=caption_run, scenes=scenes, captioner_name="tiny run")
    with serve_in_thread(app) as url:
        page = caption_in_page(url, image, screenshot=tmp_path / "shot.png")
    assert page["error"] == "" and page["blocked"] == []
    assert " ".join(page["caption"].split()) == " ".join(want.caption.split())
    assert page["nearest"] == [" ".join(t.split()) for t, _ in want.nearest[:5]]
    assert [float(s) for s in page["scores"]] == pytest.approx(
        [s for _, s in want.nearest[:5]], abs=1e-3
    )
