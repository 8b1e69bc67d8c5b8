"""docs/results/README.md indexes every recorded result folder, and only those (issue 34)."""

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def test_every_results_folder_is_in_the_index():
    listed = set(re.findall(r"^\| \[`([^`/]+)/`\]", (RESULTS / "README.md").read_text(), re.M))
    folders = {p.name for p in RESULTS.iterdir() if p.is_dir()}
    assert listed == folders
