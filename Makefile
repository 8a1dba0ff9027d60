# One command each: `make run` (set up, index a repo, serve the chat) and `make test`
# (`make test-fast`: the unit tier only, seconds).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# llama-cpp-python compiles llama.cpp on install; portable flags keep the wheel usable anywhere.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
REPO ?= tests/fixtures/sample_repo
CHROMIUM ?= /usr/bin/chromium

.PHONY: setup setup-dev browser redis namespaces run index serve lint test test-fast bench eval eval-full clean

# The runtime (`make run`): requirements.txt, no torch. The tests, benchmarks and evals add
# requirements-dev.txt, which brings the train extra (torch, sentence-transformers) too.
setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

$(VENV)/.installed: requirements.txt pyproject.toml
	@echo "setup: creating $(VENV) and installing CodeQA's runtime from requirements.txt"
	@echo "setup: llama-cpp-python compiles llama.cpp the first time (about 8 minutes on 2 cores)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	@echo "setup: installing the codeqa package from this checkout (editable; the \`codeqa\` command)"
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt requirements-train.txt requirements-cluster.txt
	@echo "setup-dev: torch's CPU wheel first (an unpinned resolve pulls several GB of CUDA packages)"
	$(PY) -m pip install --quiet torch==2.13.0
	@echo "setup-dev: the train extra and the test, eval and benchmark tools (requirements-dev.txt)"
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# The browser tests drive Debian's Chromium (Playwright's own browser download can't work offline).
browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "Chromium is needed for the browser tests: sudo apt-get install -y chromium" >&2; exit 1; fi; }

# The two-instance tests (tests/test_two_apps.py) share Debian's redis-server, started on loopback by them.
REDIS_SERVER ?= /usr/bin/redis-server
redis:
	@test -x $(REDIS_SERVER) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; \
	  else echo "redis-server is needed for the two-instance tests: sudo apt-get install -y redis-server" >&2; exit 1; fi; }

# The Ray cluster tests (tests/test_cluster.py) run their nodes in network and PID namespaces of
# their own, as root: `unshare` (util-linux) and `ip` (iproute2) to bring their loopback up.
namespaces:
	@command -v ip >/dev/null && command -v unshare >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iproute2 util-linux >/dev/null; \
	  else echo "iproute2 and util-linux are needed for the cluster tests: sudo apt-get install -y iproute2" >&2; exit 1; fi; }

index: setup
	$(PY) preprocessing.py index $(REPO)

serve: setup
	$(PY) app.py

run: index serve

# ruff (lint, import order, format) and mypy over the package; both pinned in requirements-dev.txt
lint: setup-dev
	$(PY) -m ruff check
	$(PY) -m ruff format --check
	$(PY) -m mypy

test: setup-dev browser redis namespaces lint
	$(PY) -m pytest

test-fast: setup-dev
	$(PY) -m pytest -m unit

bench: setup-dev
	$(PY) -m bench.embed_bench
	$(PY) -m bench.index_bench
	$(PY) -m bench.search_bench
	$(PY) -m bench.load_bench
	$(PY) -m bench.complete_bench
	$(PY) -m bench.soak_bench

# Both evals (eval/README.md). The realistic one fetches its repositories from GitHub, or reads
# local bare mirrors from CODEQA_EVAL_MIRROR; its per-commit index snapshots live in
# CODEQA_EVAL_CACHE (default ~/.cache/codeqa-eval) and are reused by every later run.
eval: setup-dev
	$(PY) -m eval.run_eval --by-kind
	$(PY) -m eval.realistic.run --quick

eval-full: setup-dev
	$(PY) -m eval.run_eval --by-kind
	$(PY) -m eval.realistic.run

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
