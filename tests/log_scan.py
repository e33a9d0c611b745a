"""No secret in any log line of the whole suite (issue 20, item 8): a pytest plugin.

For the whole session it keeps every secret the product issues and scans every line logged.

Secrets, recorded where the product makes them (its functions wrapped at the session's start,
restored at its end):
- API tokens (`Directory.issue_token`, which bootstrapping calls too), console session secrets
  (`ConsoleSessions.start`, `start_with_password` and `renew`), the `whsec_` secrets of
  webhooks and callback sources and the master key they are derived from (`derived_secret`),
  the key that signs the console's cookies (`web.console.shell.install`), CSRF tokens and
  their raw secret (`generate_csrf`), and each console session cookie set
  (`SessionCookie.save_session`);
- for the `cronledger` processes the tests start (tests/processes.py): the
  CRONLEDGER_SECRET_KEY each is given, and every token-shaped value its standard output shows
  (the token `bootstrap` prints);
- any value a test marks with `note_secret` (form data, the passwords it gives, say: passwords
  are not noted where they are set, as generated ones are words that paths and ids hold too).
Each is looked for whole and, for a prefixed one (`clt_`, `cls_`, `whsec_`), without its
prefix. Values shorter than `MIN_LENGTH` are not secrets worth the name and are not kept.

Lines: every record of the process from DEBUG up (the root logger's level, unless a test sets
another), formatted as the product formats it (JSON with the record's extras), and the
standard error of every `cronledger` process started through tests/processes.py. They are
scanned after each test, then dropped: only the secrets are kept for the whole session. A line
holding a token-shaped value (`clt_`/`cls_` and 43 characters, `whsec_` and 44) counts as a
leak even if the token was made where no wrapper saw it.

A leak fails the session (exit status 1) and is reported by kind of secret, where it was logged
(logger or command) and during which test, with a short SHA-256 prefix, never the secret. The
summary tells how many secrets and lines were scanned. `-p no:tests.log_scan` turns it off.
Under pytest-xdist each worker scans its own tests (its own secrets and lines: a worker is a
process of its own) and hands its figures and leaks to the controller, which judges the session
and prints one summary.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import flask
import flask_wtf.csrf
import pytest

from cronledger.application import secrets as signing
from cronledger.application.directory import Directory
from cronledger.application.sessions import ConsoleSessions
from cronledger.logs import json_formatter
from web.console import shell

MIN_LENGTH = 12  # shorter values are not kept as secrets
PREFIXES = ("clt_", "cls_", "whsec_")
SHAPED = re.compile(r"\b(?:clt|cls)_[A-Za-z0-9_-]{43}|\bwhsec_[A-Za-z0-9+/]{43}=")
RUN = re.compile(rf"\S{{{MIN_LENGTH},}}")  # where a secret without white space can be
SHOWN_LEAKS = 20
WORKER_OUTPUT = "log_scan"  # the key of a pytest-xdist worker's figures in its output


def fingerprint(secret: str) -> str:
    """What names a secret in a report: the start of its SHA-256."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Leak:
    kind: str
    source: str
    test: str
    secret: str = field(repr=False)

    def __str__(self) -> str:
        return f"{self.kind} ({fingerprint(self.secret)}) logged by {self.source} in {self.test}"


class Secrets:
    """Known secrets, found in a text by the first `MIN_LENGTH` characters of each."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}  # each value kept -> its kind
        self.values: dict[str, str] = {}  # each form looked for -> the value it is a form of
        self.by_start: dict[str, list[str]] = {}
        self.spaced: list[str] = []  # forms holding white space, looked for one by one
        self.issued: Counter[str] = Counter()

    def add(self, kind: str, value: str) -> None:
        if len(value) < MIN_LENGTH or value in self.kinds:
            return
        self.issued[kind] += 1
        self.kinds[value] = kind
        forms = [value] + [value.removeprefix(p) for p in PREFIXES if value.startswith(p)]
        for form in forms:
            if len(form) >= MIN_LENGTH and form not in self.values:
                self.values[form] = value
                if RUN.fullmatch(form):
                    self.by_start.setdefault(form[:MIN_LENGTH], []).append(form)
                else:
                    self.spaced.append(form)

    def found_in(self, text: str) -> set[str]:
        """Each known value a form of which `text` holds, and each token-shaped value in it."""
        found = set(SHAPED.findall(text)) | {form for form in self.spaced if form in text}
        for run in set(RUN.findall(text)):
            for at in range(len(run) - MIN_LENGTH + 1):
                for form in self.by_start.get(run[at : at + MIN_LENGTH], ()):
                    if run.startswith(form, at):
                        found.add(form)
        return {self.values.get(form, form) for form in found}

    def kind_of(self, value: str) -> str:
        return self.kinds.get(value) or f"token-shaped value ({value.partition('_')[0]}_)"


class Scan:
    """The session's secrets, the lines of the current test, and what was found."""

    def __init__(self) -> None:
        self.secrets = Secrets()
        self.pending: dict[str, list[str]] = {}  # source -> lines not scanned yet
        self.lock = threading.Lock()
        self.lines = 0
        self.leaks: dict[tuple[str, str, str], Leak] = {}

    def add_lines(self, source: str, lines: Iterable[str]) -> None:
        with self.lock:
            self.pending.setdefault(source, []).extend(lines)

    def scan(self, test: str) -> None:
        """Search the lines logged since the last scan for every secret known so far."""
        with self.lock:
            pending, self.pending = self.pending, {}
        for source, lines in pending.items():
            self.lines += len(lines)
            for secret in self.secrets.found_in("\n".join(lines)):
                leak = Leak(self.secrets.kind_of(secret), source, test, secret)
                self.leaks.setdefault((leak.kind, source, secret), leak)

    def figures(self) -> Figures:
        return Figures(
            self.lines, Counter(self.secrets.issued), [str(leak) for leak in self.leaks.values()]
        )


@dataclass
class Figures:
    """What a scan found, in a form a pytest-xdist worker hands its controller."""

    lines: int = 0
    issued: Counter[str] = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)

    def add(self, other: Figures) -> None:
        self.lines += other.lines
        self.issued.update(other.issued)
        self.leaks.extend(other.leaks)

    def as_json(self) -> dict[str, Any]:
        return {"lines": self.lines, "issued": dict(self.issued), "leaks": self.leaks}

    @classmethod
    def of_json(cls, data: dict[str, Any]) -> Figures:
        return cls(data["lines"], Counter(data["issued"]), list(data["leaks"]))

    def summary(self) -> list[str]:
        issued = ", ".join(f"{n} {kind}" for kind, n in sorted(self.issued.items()))
        head = f"log scan: {self.lines} log lines searched for {issued or 'no secret'}"
        if not self.leaks:
            return [head + ": no secret in any"]
        shown = [f"  {leak}" for leak in self.leaks[:SHOWN_LEAKS]]
        more = (
            [f"  and {len(self.leaks) - SHOWN_LEAKS} more"] if len(self.leaks) > SHOWN_LEAKS else []
        )
        return [f"{head}: {len(self.leaks)} SECRETS LOGGED", *shown, *more]


SCAN: Scan | None = None  # the running session's, while this plugin is on


def note_secret(kind: str, value: str) -> None:
    """Keep `value` as a secret of `kind` that no log line may hold."""
    if SCAN is not None:
        SCAN.secrets.add(kind, value)


def note_output(command: str, stdout: str) -> None:
    """Keep each token-shaped value a child printed (`cronledger bootstrap`'s token)."""
    for value in SHAPED.findall(stdout):
        note_secret(f"{value.partition('_')[0]}_ printed by {command}", value)


def note_log(source: str, lines: Sequence[str]) -> None:
    """Hand the lines a child logged to the scan."""
    if SCAN is not None:
        SCAN.add_lines(source, lines)


class Collector(logging.Handler):
    """Every record of this process, as the product would write it, to the scan."""

    def __init__(self, scan: Scan) -> None:
        super().__init__(logging.NOTSET)
        self.scan = scan
        self.setFormatter(json_formatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.scan.add_lines(record.name, [self.format(record)])
        except Exception:
            self.handleError(record)


Noted = Iterable[tuple[str, str | None]]  # (kind, value) pairs
Picker = Callable[[Any, tuple[Any, ...]], Noted]  # what a call made, and its arguments


class Wrappers:
    """The product's secret makers wrapped to note what they make; undone at the end."""

    def __init__(self) -> None:
        self.undo: list[Callable[[], None]] = []

    def wrap(self, owner: type | ModuleType, name: str, pick: Picker) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def noting(*args: Any, **kwargs: Any) -> Any:
            made = original(*args, **kwargs)
            for kind, value in pick(made, args):
                if isinstance(value, str):
                    note_secret(kind, value)
            return made

        holders: list[object] = [owner]
        if isinstance(owner, ModuleType):  # and the modules that imported it by name
            holders += [m for m in list(sys.modules.values()) if vars(m).get(name) is original]
        for holder in holders:
            setattr(holder, name, noting)
            self.undo.append(functools.partial(setattr, holder, name, original))

    def restore(self) -> None:
        while self.undo:
            self.undo.pop()()


def _csrf(token: str, args: tuple[Any, ...]) -> Noted:
    """The form's token, and the raw secret it signs (kept in the session cookie)."""
    raw = flask.session.get(flask.current_app.config.get("WTF_CSRF_FIELD_NAME", "csrf_token"))
    return [("csrf token", token), ("csrf token", raw)]


def _cookie(_: None, args: tuple[Any, ...]) -> Noted:
    """The console's session cookie, as `save_session(app, session, response)` set it."""
    app, response = args[1], args[3]
    name = app.config["SESSION_COOKIE_NAME"] + "="
    cookies = response.headers.getlist("Set-Cookie")
    return [
        ("session cookie", c.partition(";")[0].removeprefix(name))
        for c in cookies
        if c.startswith(name)
    ]


def wrap_secret_makers(wrappers: Wrappers) -> None:
    wrappers.wrap(Directory, "issue_token", lambda made, _: [("api token", made.token)])
    for starting in ("start", "start_with_password", "renew"):
        wrappers.wrap(
            ConsoleSessions, starting, lambda made, _: [("console session", made and made.secret)]
        )
    wrappers.wrap(
        signing,
        "derived_secret",
        lambda made, args: [("whsec_ secret", made), ("secret key", args[0])],
    )
    wrappers.wrap(
        shell, "install", lambda _, args: [("console signing key", args[0].config["SECRET_KEY"])]
    )
    wrappers.wrap(flask_wtf.csrf, "generate_csrf", _csrf)
    wrappers.wrap(shell.SessionCookie, "save_session", _cookie)


class LogScanPlugin:
    """The hooks: wrap and listen at the start, scan after each test, judge at the end."""

    def __init__(self) -> None:
        self.scan = Scan()
        self.wrappers = Wrappers()
        self.collector = Collector(self.scan)
        self.level = logging.getLogger().level
        self.found = Figures()  # this process's, and under pytest-xdist its workers'

    def start(self) -> None:
        wrap_secret_makers(self.wrappers)
        logging.getLogger().setLevel(logging.DEBUG)
        self.listen()

    def listen(self) -> None:
        """(Again) on the root logger: a test may have replaced its handlers."""
        root = logging.getLogger()
        if self.collector not in root.handlers:
            root.addHandler(self.collector)

    def stop(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self.collector)
        root.setLevel(self.level)
        self.wrappers.restore()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self) -> None:
        self.listen()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self) -> None:
        self.listen()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self) -> None:
        self.listen()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.scan.scan(nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.scan.scan("the session's teardown")
        self.found.add(self.scan.figures())
        if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: the controller judges
            session.config.workeroutput[WORKER_OUTPUT] = self.found.as_json()
        elif self.found.leaks:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A pytest-xdist worker finished: its figures join the session's."""
        output = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT)
        if output is not None:
            self.found.add(Figures.of_json(output))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.found.summary():
            terminalreporter.write_line(line, red=bool(self.found.leaks))


def pytest_configure(config: pytest.Config) -> None:
    global SCAN
    plugin = LogScanPlugin()
    config.pluginmanager.register(plugin, "log-scan")
    SCAN = plugin.scan
    plugin.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    global SCAN
    plugin = config.pluginmanager.get_plugin("log-scan")
    if isinstance(plugin, LogScanPlugin):
        plugin.stop()
        config.pluginmanager.unregister(plugin)
    SCAN = None
