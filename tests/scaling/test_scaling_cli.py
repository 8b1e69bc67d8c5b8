"""The sweep -> fit-law -> efficiency commands end to end on the planted backend (a known law)."""

import argparse
import json

import pytest

from prh.cli import efficiency, fit_law, sweep


def _run(module, argv):
    p = argparse.ArgumentParser()
    module.add_arguments(p)
    return module.run(p.parse_args(argv))


@pytest.mark.slow
def test_planted_pipeline_recovers_noise_level(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = ["--preset", "demo", "--backend", "planted", "--out", str(out), "--workers", "1"]
    assert _run(sweep, [*argv, "--no-progress"]) == 0
    assert _run(sweep, [*argv, "--no-progress"]) == 0  # resumed: nothing to do
    assert "0 run, 72 already done" in capsys.readouterr().out
    res = out / "results.jsonl"
    assert (
        _run(fit_law, [str(res), "--starts", "4", "--json", str(tmp_path / "law_copy.json")]) == 0
    )
    text = capsys.readouterr().out
    assert "chosen:" in text and "seed spread" in text
    law = json.loads((out / "law.json").read_text())
    assert law == json.loads((tmp_path / "law_copy.json").read_text())
    assert law["n_fit"] == 20 and law["n_heldout"] == 8 and law["n_pairs"] == 8
    assert 0.002 < law["seed_spread"] < 0.03  # planted noise 0.01, 8 pairs
    assert law["heldout_rmse"] < 0.03
    assert (out / "law_fit.png").read_bytes()[:4] == b"\x89PNG"
    assert (
        _run(efficiency, [str(res), "--bootstrap", "50", "--json", str(tmp_path / "eff.json")]) == 0
    )
    eff = json.loads((tmp_path / "eff.json").read_text())
    assert eff["ratio"] is not None and eff["ratio"] > 1  # next-token (rho 0.3) is slower


def test_fit_law_errors(tmp_path):
    bad = tmp_path / "r.jsonl"
    bad.write_text(json.dumps({"split": "fit", "views": "mixture", "rho": 0.5, "samples": 10,
                               "score": 0.5}) + "\n")  # fmt: skip
    from prh.errors import InputError

    with pytest.raises(InputError, match="need fit and held-out mixture runs"):
        _run(fit_law, [str(bad)])
    with pytest.raises(InputError, match="no runs with views='good'"):
        _run(efficiency, [str(bad)])
