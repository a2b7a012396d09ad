PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/berth: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/berth

demo: $(BIN)/berth
	$(BIN)/berth simulate --out out/demo

test: $(BIN)/berth
	$(BIN)/python -m pytest

lint: $(BIN)/berth
	$(BIN)/ruff check berth tests benchmarks

bench: $(BIN)/berth
	$(BIN)/python benchmarks/throughput.py

clean:
	rm -rf $(VENV) out build *.egg-info
