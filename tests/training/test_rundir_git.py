"""meta.json's git revision is prh's own, never that of the repository the user runs in."""

import subprocess
from pathlib import Path

import pytest

import prh
from prh.training.rundir import git_revision, prh_source

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def _repo(root: Path, files: dict[str, str]) -> str:
    root.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "c"], cwd=root, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_installed_package_inside_the_users_repository_has_no_revision(tmp_path):
    _repo(tmp_path / "user", {"train.py": "print(1)\n", ".gitignore": ".venv/\n"})
    pkg = tmp_path / "user" / ".venv" / "lib" / "site-packages" / "prh"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '0.1.0'\n")
    assert git_revision(pkg) is None


def test_a_checkout_of_prh_reports_its_revision_and_dirty_state(tmp_path):
    rev = _repo(tmp_path / "prh", {"src/prh/__init__.py": "x = 1\n"})
    pkg = tmp_path / "prh" / "src" / "prh"
    assert git_revision(pkg) == rev
    (pkg / "__init__.py").write_text("x = 2\n")
    assert git_revision(pkg) == rev + "-dirty"


def test_no_repository_at_all(tmp_path):
    pkg = tmp_path / "prh"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    if subprocess.run(["git", "rev-parse"], cwd=pkg, capture_output=True).returncode == 0:
        pytest.skip("tmp_path lies inside a git repository")
    assert git_revision(pkg) is None


def test_prh_source_names_the_installed_version():
    assert prh_source()["version"] == prh.__version__
