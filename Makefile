# cronledger: every target sets itself up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
PORT ?= 8000
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: install tools translations run check test soak lint audit-deps bench lock alerts clean

# What serving needs, and nothing more (make run). A new venv's own pip and setuptools have
# known vulnerabilities (make audit-deps): upgraded.
$(SERVE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip setuptools
	$(PIP) -e .
	touch $@

# And the test, lint and type-checking toolchain (make install, test, check, lint).
$(STAMP): $(SERVE_STAMP)
	$(PIP) -e '.[dev]'
	touch $@

install: $(STAMP)

# The demo token, the secret key and the SQLite store under var/ are readable by their owner
# only. The secret key is made once (a hard link never replaces a file) and signs the console's
# cookies and the webhooks' and callback sources' secrets, so sign-ins outlive a restart; a
# CRONLEDGER_SECRET_KEY set in the environment is used instead.
run: $(SERVE_STAMP)
	umask 077 && mkdir -p var && chmod 700 var
	test -s var/secret-key || { umask 077 \
	  && $(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(48))' > var/secret-key.$$$$ \
	  && { ln var/secret-key.$$$$ var/secret-key 2>/dev/null || true; } \
	  && rm -f var/secret-key.$$$$; }
	chmod 600 var/secret-key
	$(BIN)/cronledger migrate
	test -s var/demo-token || { umask 077 \
	  && $(BIN)/cronledger bootstrap --tenant demo --admin admin | tail -n 1 > var/demo-token.new \
	  && mv var/demo-token.new var/demo-token; }
	chmod 600 var/demo-token
	@echo "demo admin token: $$(cat var/demo-token) (saved in var/demo-token)"
	@echo "serving on http://localhost:$(PORT)"
	CRONLEDGER_SECRET_KEY="$${CRONLEDGER_SECRET_KEY:-$$(cat var/secret-key)}" \
	  $(BIN)/cronledger serve --port $(PORT)

# What the tests need besides Python, from Debian's packages when run as root: chromium for the
# browser tests (Playwright's own browser download is out of reach), a Chinese font and an emoji
# font (the header's bell) for the console's pages and screenshots, promtool (package
# prometheus) for the alert rules, openssl and systemd-analyze for the deploy files. Two `make test` at once on a new machine: the
# second waits for the first's apt-get instead of failing on its lock. What is still missing
# skips its tests, and fails them on CI.
TOOLS_COMMANDS := chromium:chromium promtool:prometheus openssl:openssl systemd-analyze:systemd
tools:
	@for pair in $(TOOLS_COMMANDS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	  fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-wqy-microhei"; \
	  fc-list 2>/dev/null | grep -qi emoji || missing="$$missing fonts-noto-color-emoji"; \
	  test -z "$$missing" || { test "$$(id -u)" = 0 \
	    && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
	       $$missing >/dev/null; } \
	  || echo "could not install$$missing: their tests skip (and fail on CI)"

# The catalogues: the API's and the console's shared words (web/translations) and each console
# area's, each .po compiled to its .mo (commit both; a test compares).
translations: install
	for catalogue in web/translations/ web/console/translations/*/; do \
	  $(BIN)/pybabel compile --statistics -d "$$catalogue" || exit 1; done

# The one-minute loop: lint, types, and the unit and integration tests on SQLite without the
# slow ones, on every core.
check: lint
	$(BIN)/python -m pytest -q -n auto -m "not slow and not postgresql" tests/unit tests/integration

# Everything, on both stores, three workers a core (the suite mostly waits for servers, processes
# and the database: on 2 cores under the same load six workers ran it in 17:51, four had run
# four fifths of it in 20 minutes). A worker takes a module's tests together, so a module's
# server starts once, and the heaviest modules first (tests/scheduling.py); the run's time and
# its ten slowest tests are printed, so a creeping suite is seen.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 3 )))
test: install tools
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=10

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

# deploy/requirements.lock: every dependency of the image (deploy/Containerfile), pinned with the
# hashes of its files, for the image's Python on Linux. Run after changing pyproject.toml's
# dependencies (the other pins stay), or `make lock LOCK_FLAGS=--upgrade` to take the newest
# releases within the ranges; then `make test`, and commit it. tests/e2e/test_deploy.py checks
# that it pins what pyproject.toml asks for.
$(VENV)/.lock-installed: $(SERVE_STAMP)
	$(PIP) -e '.[lock]'
	touch $@

LOCK_FLAGS ?=
lock: $(VENV)/.lock-installed
	$(BIN)/uv pip compile pyproject.toml --quiet --generate-hashes $(LOCK_FLAGS) \
	  --python-version 3.11 --python-platform linux --output-file deploy/requirements.lock

# deploy/alerts.yml with its runbook links at your copy of docs/operations.md: the file links to
# RUNBOOK_PLACEHOLDER, a base that exists nowhere; `make alerts RUNBOOK_BASE=https://...` writes
# var/alerts.yml (or ALERTS_OUT) with RUNBOOK_BASE in its place, for Prometheus to load.
RUNBOOK_PLACEHOLDER := https://cronledger.example.invalid/docs/operations.md
ALERTS_OUT ?= var/alerts.yml
alerts:
	@case "$(RUNBOOK_BASE)" in https://*|http://*) ;; \
	  *) echo "set RUNBOOK_BASE to the absolute URL of docs/operations.md" >&2; exit 2;; esac
	mkdir -p "$$(dirname '$(ALERTS_OUT)')"
	sed 's|$(RUNBOOK_PLACEHOLDER)#|$(RUNBOOK_BASE)#|' deploy/alerts.yml > '$(ALERTS_OUT)'
	@echo "wrote $(ALERTS_OUT): runbook links at $(RUNBOOK_BASE)"

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
