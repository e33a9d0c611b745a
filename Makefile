# cronledger: every target sets itself up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install tools translations run check test soak lint audit-deps bench clean

# A new venv's own pip and setuptools have known vulnerabilities (make audit-deps): upgraded.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip setuptools
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The demo token and the SQLite store under var/ are readable by their owner only.
run: install
	umask 077 && mkdir -p var && chmod 700 var
	$(BIN)/cronledger migrate
	test -s var/demo-token || { umask 077 \
	  && $(BIN)/cronledger bootstrap --tenant demo --admin admin | tail -n 1 > var/demo-token.new \
	  && mv var/demo-token.new var/demo-token; }
	chmod 600 var/demo-token
	@echo "demo admin token: $$(cat var/demo-token) (saved in var/demo-token)"
	@echo "serving on http://localhost:8000"
	$(BIN)/cronledger serve --port 8000

# What the tests need besides Python, from Debian's packages when run as root: chromium for the
# browser tests (Playwright's own browser download is out of reach), a Chinese font for the
# console's pages and screenshots, promtool (package prometheus) for the alert rules, openssl
# and systemd-analyze for the deploy files. Two `make test` at once on a new machine: the
# second waits for the first's apt-get instead of failing on its lock. What is still missing
# skips its tests, and fails them on CI.
TOOLS_COMMANDS := chromium:chromium promtool:prometheus openssl:openssl systemd-analyze:systemd
tools:
	@for pair in $(TOOLS_COMMANDS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	  fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-wqy-microhei"; \
	  test -z "$$missing" || { test "$$(id -u)" = 0 \
	    && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
	       $$missing >/dev/null; } \
	  || echo "could not install$$missing: their tests skip (and fail on CI)"

# The console's catalogues: each area's .po compiled to its .mo (commit both; a test compares).
translations: install
	for catalogue in web/console/translations/*/; do \
	  $(BIN)/pybabel compile --statistics -d "$$catalogue" || exit 1; done

# The one-minute loop: lint, types, and the unit and integration tests on SQLite without the
# slow ones, on every core.
check: lint
	$(BIN)/python -m pytest -q -n auto -m "not slow and not postgresql" tests/unit tests/integration

# Everything, on both stores, on every core (a worker takes a module's tests together, so a
# module's server starts once); the ten slowest tests are named, so a creeping suite is seen.
test: install tools
	$(BIN)/python -m pytest -n auto --dist loadscope --durations=10

# An hour of the whole deployment under random kills and traffic, then an audit (PostgreSQL).
SOAK_MINUTES ?= 60
soak: install
	$(BIN)/python -m tests.faults.soak --minutes $(SOAK_MINUTES)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Known vulnerabilities in the installed packages; skipped when no advisory source answers.
audit-deps: install
	$(BIN)/python .ci/audit_deps.py

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	touch $@

bench: install $(VENV)/.bench-installed
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
