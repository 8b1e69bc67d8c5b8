"""prh train with the real views (prh.views) on a small corpus file, and the CLI's error paths."""

import json

import numpy as np
import pytest

from prh.errors import InputError
from prh.features import save_features
from prh.training import load_run, train, train_config
from prh.training.rundir import read_metrics

OBJECTS = ["red cube", "blue ball", "green cone", "small box", "big star"]
WORDS = ["a", "one", "there is a", "we see a", "look a"]
PLACES = ["on the left", "on the right", "in the middle", "at the top"]


@pytest.fixture
def corpus(tmp_path):
    rows = []
    for i in range(40):
        obj, place = OBJECTS[i % 5], PLACES[(i // 5) % 4]
        caps = [f"{WORDS[(i + j) % 5]} {obj} {place}" for j in range(3)]
        rows.append(json.dumps({"image": f"scene_{i}", "captions": caps}))
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def _cfg(corpus, **kw):
    base = dict(
        corpus=str(corpus), batch_size=16, samples=64, max_len=16, vocab_size=120,
        checkpoint_every=2, log_every=1,
        model_overrides={"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "embed_dim": 8},
    )  # fmt: skip
    base.update(kw)
    return train_config("tiny", **base)


@pytest.mark.slow
@pytest.mark.parametrize("views", ["good", "bad", "next-token", "mixture"])
def test_each_view_kind_trains_and_embeds(tmp_path, corpus, views):
    feats = tmp_path / "target.safetensors"
    rng = np.random.default_rng(0)
    rng_feats = rng.normal(size=(20, 1, 6))
    save_features(feats, rng_feats, ids=[f"scene_{i}" for i in range(20)])
    cfg = _cfg(corpus, views=views, rho=0.5, eval_features=str(feats), eval_every=2)
    run = train(cfg, tmp_path / "run", progress=False, threads=1)
    loaded = load_run(run)
    out = loaded.encode_texts(["a red cube on the left", "we see a big star at the top"])
    n_layers = 2 if views == "next-token" else 3  # + the zero-padded projection for JEPAs
    assert out.shape == (2, n_layers, 32) and np.isfinite(out).all()
    metrics = read_metrics(run)
    scores = [r["eval_mutual_knn"] for r in metrics if "eval_mutual_knn" in r]
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
    # the logged evaluation is the alignment of the saved model: caption (world_seed + 1) mod n
    # of each evaluated image (a world's wording rule; prh demo --corpus measures the same one),
    # embedded by the loaded run, against the feature file
    from prh.data import load_corpus
    from prh.metrics import measure

    c = load_corpus(str(corpus))
    pick = dict(zip(c.image_ids, (caps[1 % len(caps)] for caps in c.captions)))
    mine = loaded.encode_texts([pick[f"scene_{i}"] for i in range(20)])
    want = measure(mine, rng_feats, metric="mutual_knn", k=10).score
    assert scores[-1] == pytest.approx(float(want), abs=1e-9)
    assert (run / "tokenizer.json").is_file()


def test_corpus_smaller_than_batch_is_one_clear_error(tmp_path, corpus):
    with pytest.raises(InputError, match=r"40 images in the corpus, fewer than the batch size 64"):
        train(_cfg(corpus, batch_size=64), tmp_path / "run", progress=False, threads=1)


@pytest.fixture
def main(monkeypatch):
    """``prh.cli.main`` with only the train command registered (others may be mid-build)."""
    from prh import cli

    monkeypatch.setattr(cli, "COMMANDS", {"train": cli.COMMANDS["train"]})
    return cli.main


def test_cli_errors_exit_2_with_one_line(tmp_path, corpus, capsys, main):
    assert main(["train", "--resume", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("prh train: error:") and "no such run folder to resume" in err
    assert "\n" not in err
    assert main(["train", "--views", "mixture", "--out", str(tmp_path / "r")]) == 2
    assert "--views mixture needs --rho" in capsys.readouterr().err
    args = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "r2"), "--batch-size", "64"]
    assert main(args) == 2
    assert "fewer than the batch size 64" in capsys.readouterr().err
    run = tmp_path / "r3"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"train": {"views": "good"}, "model": {}}))
    (run / "meta.json").write_text("{}")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "step_00000002.json").write_text("{not json")
    assert main(["train", "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert "not a readable checkpoint sidecar" in err
