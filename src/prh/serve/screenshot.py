"""The README screenshot of the page: ``python -m prh.serve.screenshot --out docs/img/serve.png``.

Serves the app on a loopback port, uploads a generated held-out scene through the page's file
picker in headless Chromium and saves the full page. With ``--run`` the run's own captioner is used
and its alignment numbers and bound plot appear; without one,
the model-free mean-colour control captions the scene, and the page says so.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from prh.errors import PrhError


def main(argv: list[str] | None = None) -> int:
    """Write the screenshot; print the caption the page showed."""
    p = argparse.ArgumentParser(prog="python -m prh.serve.screenshot", description=__doc__)
    p.add_argument("--run", type=Path, help="demo run folder (default: none, colour control)")
    p.add_argument("--out", type=Path, default=Path("docs/img/serve.png"), help="PNG to write")
    p.add_argument("--seed", type=int, default=3, help="seed of the scene to upload (default 3)")
    args = p.parse_args(argv)

    from prh.serve.app import create_app
    from prh.serve.browser import caption_in_page, serve_in_thread
    from prh.serve.colour import ColourCaptioner
    from prh.serve.runinfo import captioner_name, load_run_captioner, run_world
    from prh.serve.scenes import SceneSource

    try:
        if args.run is not None:
            captioner = load_run_captioner(args.run)
            name = captioner_name(args.run, captioner)
        else:
            captioner, name = ColourCaptioner(), "mean-colour control (no model)"
        world_name, world_seed = run_world(args.run)
        scenes = SceneSource(world_seed=world_seed, world=world_name)
        app = create_app(captioner, run_dir=args.run, scenes=scenes, captioner_name=name)
        with tempfile.TemporaryDirectory() as tmp:
            image = Path(tmp) / f"scene-{args.seed}.png"
            image.write_bytes(scenes.png(args.seed))
            with serve_in_thread(app) as url:
                page = caption_in_page(url, image, screenshot=args.out)
    except PrhError as e:
        print(f"screenshot: error: {e}", file=sys.stderr)
        return 2
    if page["error"]:
        print(f"screenshot: error: the page showed {page['error']!r}", file=sys.stderr)
        return 1
    print(f"{args.out}: caption {page['caption']!r} ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
