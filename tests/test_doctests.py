"""Every docstring example in src/prh runs, in ``make test`` (the examples are documentation that
cannot drift from the code).

Each module is imported and its doctests run with :mod:`doctest`; a module whose optional extra is
not installed (fastapi for ``prh.serve.app``) is skipped and says which import failed.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import prh

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(prh.__path__, "prh.") if m.name != "prh.__main__"
)


def test_every_module_is_listed() -> None:
    assert {"prh.linalg", "prh.optim", "prh.bridge.procrustes", "prh.cli.train"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        pytest.skip(f"{name}: optional dependency missing ({e})")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):  # each example sees its module's globals
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} docstring examples in {name} failed (see above)"
