PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-output

.PHONY: demo test bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[gates,serve]'
	touch $@

# llama-cpp-python's wheel compiles in the background while the rest installs (docs/contributing.md)
$(VENV)/.installed-dev: $(BIN)/python pyproject.toml tools/install_dev.sh tools/llama_cpp_skip_common.cmake
	bash tools/install_dev.sh $(VENV)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/hoprag demo --data data --out $(DEMO_OUT)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/bm25.py
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/metrics.py
	$(BIN)/python bench/eval.py
	$(BIN)/python bench/scale.py

docs: $(VENV)/.installed-dev
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache site
