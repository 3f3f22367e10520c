# Two entry points, each doing all the set-up on a fresh machine (see README.md):
#   make example   # the main job on a built-in example (a simulated 8x H100 node)
#   make test      # the test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch, installed before anything can ask for a bare "torch" (which pulls a multi-GB CUDA build):
# from PyTorch's CPU wheel index, or the default index with a note when that cannot be reached
# (scripts/install-torch.sh prints which build it got).
TORCH ?= torch==2.13.0

$(BIN)/gpuadvisor: pyproject.toml scripts/install-torch.sh
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	sh scripts/install-torch.sh $(BIN)/python '$(TORCH)'
	@# deepspeed: no CUDA ops built. The build backend's notes go to a log, shown whole when the install fails.
	@echo "installing gpuadvisor and its test extras (log: $(VENV)/install.log)"
	@DS_BUILD_OPS=0 $(BIN)/python -m pip install -q -e '.[test]' >$(VENV)/install.log 2>&1 \
	  || { cat $(VENV)/install.log; echo "pip install failed (log above: $(VENV)/install.log)" >&2; exit 1; }
	touch $@

.PHONY: setup example test chromium shellcheck fio promtool lint
setup: $(BIN)/gpuadvisor

example: $(BIN)/gpuadvisor
	$(BIN)/gpuadvisor scan --simulate dgx-h100 --model llama-3-70b --json example-scan.json --html example-report.html

# Browser tests need Debian's chromium; install it when we can (root with apt). Where it cannot be had they
# skip and say why -- except under CI (CI set and not false/0/no, as .ci/run and CI services set it), where
# this step fails: a green CI run always means the HTML report was rendered in a browser.
CHROMIUM_CMDS ?= chromium chromium-browser google-chrome google-chrome-stable
APT ?= apt-get
chromium:
	@found=""; for c in $(CHROMIUM_CMDS); do command -v $$c >/dev/null 2>&1 && { found=$$(command -v $$c); break; }; done; \
	if [ -z "$$found" ] && [ -n "$$GPUADVISOR_CHROMIUM" ] && [ -x "$$GPUADVISOR_CHROMIUM" ]; then found=$$GPUADVISOR_CHROMIUM; fi; \
	if [ -n "$$found" ]; then echo "chromium: $$found (browser tests will run)"; exit 0; fi; \
	why="not found ($(CHROMIUM_CMDS))"; \
	if [ "$$(id -u)" != 0 ]; then why="$$why, and not root: cannot apt-get install chromium"; \
	elif ! command -v $(APT) >/dev/null 2>&1; then why="$$why, and no $(APT)"; \
	else echo "chromium: installing ($(APT) install chromium)..."; \
	  if $(APT) update -qq && DEBIAN_FRONTEND=noninteractive $(APT) install -y -qq chromium >/dev/null; then \
	    echo "chromium: installed (browser tests will run)"; exit 0; fi; \
	  why="$$why, and $(APT) install chromium failed (package manager locked or offline?)"; fi; \
	case "$$(printf '%s' "$$CI" | tr 'A-Z' 'a-z')" in \
	  ""|0|false|no) echo "chromium: $$why: browser tests will be SKIPPED (under CI they fail)";; \
	  *) echo "chromium: $$why: CI=$$CI requires the browser tests, failing" >&2; exit 1;; \
	esac

# The example scripts are checked with shellcheck (Debian package shellcheck), installed the same way: skipped
# with a reason where it cannot be had, except under CI, where this step fails.
shellcheck:
	@sh scripts/need-tool.sh shellcheck shellcheck 'the shellcheck tests of the example scripts'

# The storage benchmark's comparison with fio needs fio; installed the same way.
fio:
	@sh scripts/need-tool.sh fio fio 'the storage comparison with fio'


# promtool (Prometheus' own checker, in Debian's prometheus package) checks the textfile output of check and fleet.
promtool:
	@sh scripts/need-tool.sh promtool prometheus 'the promtool checks'

# The engineering checks run before the suite: ruff (lint, line length 120, format) and mypy over the package
# as it installs (scripts/typecheck.py). The suite itself builds the wheel and runs the CLI from a fresh venv
# (tests/test_packaging.py) and fails a test that skips on a missing project module (tests/conftest.py).
test: $(BIN)/gpuadvisor chromium shellcheck fio promtool lint
	$(BIN)/python -m pytest -q

LINTED = gpuadvisor probes reports tests benchmarks scripts
lint: $(BIN)/gpuadvisor
	$(BIN)/python -m ruff check $(LINTED)
	$(BIN)/python -m ruff format --check -q $(LINTED)
	$(BIN)/python scripts/typecheck.py
