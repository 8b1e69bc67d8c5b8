"""``python -m prh`` is the ``prh`` command."""

from prh.cli import entry

if __name__ == "__main__":
    entry()
