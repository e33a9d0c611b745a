# cronledger: every target sets itself up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	mkdir -p var
	$(BIN)/cronledger migrate
	test -s var/demo-token || { \
	  $(BIN)/cronledger bootstrap --tenant demo --admin admin | tail -n 1 > var/demo-token.new \
	  && mv var/demo-token.new var/demo-token; }
	@echo "demo admin token: $$(cat var/demo-token) (saved in var/demo-token)"
	@echo "serving on http://localhost:8000"
	$(BIN)/cronledger serve --port 8000

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
