# One command each: `make run` (set up, index a repo, serve the chat) and `make test`
# (`make test-fast`: the unit tier only, seconds).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# llama-cpp-python compiles llama.cpp on install; portable flags keep the wheel usable anywhere.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
REPO ?= tests/fixtures/sample_repo
CHROMIUM ?= /usr/bin/chromium

.PHONY: setup browser run index serve test test-fast bench eval eval-full clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .  # the `codeqa` command, from this checkout
	touch $@

# The browser tests drive Debian's Chromium (Playwright's own browser download can't work offline).
browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "Chromium is needed for the browser tests: sudo apt-get install -y chromium" >&2; exit 1; fi; }

index: setup
	$(PY) preprocessing.py index $(REPO)

serve: setup
	$(PY) app.py

run: index serve

test: setup browser
	$(PY) -m pytest

test-fast: setup
	$(PY) -m pytest -m unit

bench: setup
	$(PY) bench/index_bench.py
	$(PY) bench/search_bench.py
	$(PY) bench/load_bench.py
	$(PY) bench/complete_bench.py
	$(PY) bench/soak_bench.py

# Both evals (eval/README.md). The realistic one fetches its repositories from GitHub, or reads
# local bare mirrors from CODEQA_EVAL_MIRROR; its per-commit index snapshots live in
# CODEQA_EVAL_CACHE (default ~/.cache/codeqa-eval) and are reused by every later run.
eval: setup
	$(PY) eval/run_eval.py --by-kind
	$(PY) eval/realistic/run.py --quick

eval-full: setup
	$(PY) eval/run_eval.py --by-kind
	$(PY) eval/realistic/run.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
