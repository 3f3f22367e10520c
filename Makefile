# Two entry points, each doing all the set-up on a fresh machine (see README.md):
#   make example   # the main job on a built-in example (a simulated 8x H100 node)
#   make test      # the test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch, installed before anything can ask for a bare "torch" (which pulls a multi-GB CUDA build).
TORCH ?= torch==2.13.0

$(BIN)/gpuadvisor: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

.PHONY: setup example test chromium lint
setup: $(BIN)/gpuadvisor

example: $(BIN)/gpuadvisor
	$(BIN)/gpuadvisor scan --simulate dgx-h100 --model llama-3-70b --json example-scan.json --html example-report.html

# Browser tests need Debian's chromium; install it when we can (root with apt), else they skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
	  echo "chromium not installed: browser tests will be skipped"

test: $(BIN)/gpuadvisor chromium
	$(BIN)/python -m pytest -q

lint: $(BIN)/gpuadvisor
	$(BIN)/python -m ruff check gpuadvisor probes reports tests benchmarks
