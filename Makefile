# One command each: `make run` (set up, index the sample repo, start CodeQA) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# llama-cpp-python compiles llama.cpp on install; portable flags keep the wheel usable anywhere.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
export HF_HUB_OFFLINE := 1
REPO ?= tests/fixtures/sample_repo

.PHONY: setup run index test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

index: setup
	$(PY) preprocessing.py index $(REPO)

run: index
	$(PY) preprocessing.py list

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) bench/index_bench.py

clean:
	rm -rf $(VENV) .pytest_cache
