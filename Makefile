# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# One thread per core on the 2-core reference machine; override for bigger machines.
export OMP_NUM_THREADS ?= 2
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup browser test test-fast lint demo clean

setup: $(STAMP)

# torch is pinned here only (the CPU wheel that lies on this machine's disk); the package itself
# asks for a range so GPU users keep their own build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[all,dev]"
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

# The browser test of `prh serve` drives Debian's chromium (never a downloaded browser). Installed
# here when we are root and it is missing; otherwise that one test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "note: chromium not installed; the browser test of prh serve will skip"; }

test: lint browser
	$(BIN)/python -m pytest -q

# Everything but the tests marked slow (the toy demo, multi-process training, the README example).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# The main job: the whole story on the embedded world (report in runs/demo/report.html).
demo: $(STAMP)
	$(BIN)/prh demo

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .ruff_cache
