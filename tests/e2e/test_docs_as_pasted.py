"""Every shell block of README.md and docs/*.md, pasted as a reader pastes it.

The blocks of each file run in order in one bash (a file's variables carry from block to
block, as in the reader's terminal), against one `cronledger serve` on a SQLite store that
`make run` could have made: a `demo` tenant whose admin token is in `var/demo-token` (and in
`$TOKEN`), the files in order (README.md, then docs/ by name) on that one store, as a reader
who follows the README and then the guides. `localhost:8000` stands for the served process.
`curl` fails on an answer that is not 2xx unless the command's comment gives the status it
expects (`# 409: ...`), which it must then be. A block that cannot run here says why in an
HTML comment just before its fence: `<!-- not run: needs a Kubernetes cluster -->`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cronledger.version import installed_version
from tests.e2e.helpers import answers
from tests.processes import CLI, Child, environment, free_port, run_cli, started

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"sh", "bash", "console", "shell"}
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*\Z", re.DOTALL)
COMMAND = re.compile(r"^(\$ )?(curl|cronledger) ", re.MULTILINE)
EXPECTED_STATUS = re.compile(r" {2,}# ?([1-5]\d\d)\b")  # after a command: `  # 409: ...`
# A release shown as the service shows it: /healthz, `cronledger --version`, a header.
VERSION_QUOTED = re.compile(r'(?:"version": "|\bcronledger[ /]|Api-Version: )(\d+\.\d+\.\d+)\b')
MARK = "@@ block "
FILE_SECONDS = 300  # one file's blocks, the server answering each at once
SECRET_KEY = "docs-as-pasted-secret-key-of-32-characters"
# What every file's bash starts with: stop at the first failure, and a curl that fails on an
# answer it does not expect (the body shown either way).
PRELUDE = """\
set -euo pipefail
EXPECT_STATUS=
curl() {
  local expected=$EXPECT_STATUS
  EXPECT_STATUS=
  if [ -z "$expected" ]; then
    command curl --fail-with-body --no-progress-meter --max-time 30 "$@"
    return
  fi
  local answer status
  answer=$(command curl --no-progress-meter --max-time 30 -w '\\n%{http_code}' "$@")
  status=${answer##*$'\\n'}
  printf '%s\\n' "${answer%$'\\n'*}"
  if [ "$status" != "$expected" ]; then
    echo "expected $expected, answered $status" >&2
    return 22
  fi
}
"""


@dataclass(frozen=True)
class Block:
    """One fenced block of a guide, where it starts and why it is not run (if it is not)."""

    guide: Path
    line: int
    language: str
    text: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.guide.relative_to(ROOT)}:{self.line}"

    def script(self, base: str) -> str:
        """What a reader pastes: a console block's `$ ` lines, curl's status expectations
        made checks, `localhost:8000` the served process."""
        text = self.text
        if self.language == "console":
            text = "".join(line[2:] for line in text.splitlines(True) if line.startswith("$ "))
        return "".join(_expecting(command) for command in _commands(text)).replace(
            "localhost:8000", base.removeprefix("http://")
        )


def _commands(text: str) -> Iterator[str]:
    """The block's commands, each with its continuation lines (a backslash, an open quote)."""
    pending = ""
    for line in text.splitlines(True):
        pending += line
        if pending.rstrip("\n").endswith("\\") or not _closed(pending):
            continue
        yield pending
        pending = ""
    if pending:
        yield pending


def _closed(command: str) -> bool:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        list(lexer)
    except ValueError:  # "No closing quotation"
        return False
    return True


def _expecting(command: str) -> str:
    """`command`, told the status its comment says curl gets (`# 409: approved already`)."""
    said = [
        found.group(1) for line in command.splitlines() if (found := EXPECTED_STATUS.search(line))
    ]
    return f"EXPECT_STATUS={said[0]}\n{command}EXPECT_STATUS=\n" if said else command


def blocks(guide: Path) -> list[Block]:
    text = guide.read_text(encoding="utf-8")
    found = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip()
        marked = NOT_RUN.search(before[-300:])
        line = text.count("\n", 0, fence.start()) + 1
        not_run = marked.group(1) if marked else None
        found.append(Block(guide, line, fence.group(1), fence.group(2), not_run))
    return found


@dataclass(frozen=True)
class Outcome:
    """What one file's bash did: the blocks it reached, and what it printed."""

    reached: list[str]
    finished: bool
    output: str


def run_guide(guide_blocks: list[Block], base: str, env: dict[str, str], cwd: Path) -> Outcome:
    """The blocks in one bash, each announced on standard error before it starts."""
    script = PRELUDE + "".join(
        f"echo '{MARK}{block.where}' >&2\n{block.script(base)}\n" for block in guide_blocks
    )
    script += f"echo '{MARK}end' >&2\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=FILE_SECONDS,
        check=False,
    )
    reached = [line.removeprefix(MARK) for line in done.stderr.splitlines() if MARK in line]
    finished = done.returncode == 0 and reached[-1:] == ["end"]
    output = f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return Outcome([where for where in reached if where != "end"], finished, output)


@dataclass(frozen=True)
class Reader:
    """Where a reader pastes: the served base URL, the shell's environment and folder."""

    base: str
    env: dict[str, str]
    folder: Path
    server: Child


@pytest.fixture(scope="module")
def reader(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reader]:
    """`make run`'s store and token, and its server on a port of its own."""
    folder = tmp_path_factory.mktemp("reader")
    shutil.copy2(sqlite_template, folder / "cronledger.sqlite")
    store_url = f"sqlite:///{folder / 'cronledger.sqlite'}"
    migrated = run_cli(store_url, "migrate")  # as `make run` does: the keys made before serving
    assert migrated.returncode == 0, migrated.stderr
    made = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    (folder / "var").mkdir()
    (folder / "var" / "demo-token").write_text(token + "\n", encoding="utf-8")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = {"CRONLEDGER_SECRET_KEY": SECRET_KEY}
    with started(store_url, "serve", "--port", str(port), **served) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        path = f"{Path(CLI).parent}{os.pathsep}{os.environ['PATH']}"  # as in an activated venv
        env = environment(store_url, **served, TOKEN=token, PATH=path)
        yield Reader(base, env, folder, child)


def test_every_shell_block_runs_as_pasted(reader: Reader) -> None:
    ran: list[str] = []
    skipped: list[str] = []
    for guide in GUIDES:
        found = [block for block in blocks(guide) if block.language in SHELLS]
        skipped += [f"{block.where}: {block.not_run}" for block in found if block.not_run]
        to_run = [block for block in found if not block.not_run]
        if not to_run:
            continue
        outcome = run_guide(to_run, reader.base, reader.env, reader.folder)
        failed = outcome.reached[-1] if outcome.reached else to_run[0].where
        assert outcome.finished, (
            f"{failed} failed as pasted:\n{outcome.output}\n{reader.server.describe()}"
        )
        assert outcome.reached == [block.where for block in to_run], outcome.output
        ran += outcome.reached
    assert {where.partition(":")[0] for where in ran} >= {"README.md", "docs/api.md"}
    print(f"{len(ran)} blocks ran; {len(skipped)} not run:\n" + "\n".join(skipped))


def test_every_sql_block_runs_on_the_store(reader: Reader) -> None:
    """The guides' SQL for operators runs as pasted on the store `make run` made (analytics.md's
    queries take parameters: tests/integration/test_analytics_queries.py runs each on both
    stores against a known data set)."""
    queries = [
        block
        for guide in GUIDES
        if guide.name != "analytics.md"
        for block in blocks(guide)
        if block.language == "sql"
    ]
    assert queries
    store = sqlite3.connect(f"file:{reader.folder / 'cronledger.sqlite'}?mode=ro", uri=True)
    with contextlib.closing(store):
        for block in queries:
            try:
                store.execute(block.text).fetchall()
            except sqlite3.Error as error:
                pytest.fail(f"{block.where}: {error}")


def test_a_broken_snippet_fails(reader: Reader) -> None:
    """The harness is not blind: a wrong path, a status other than the one the comment says or
    a failing command stops the file at its block; the status a comment says passes."""

    def pasted(middle: str) -> Outcome:
        texts = ["curl localhost:8000/healthz\n", middle, "curl localhost:8000/healthz\n"]
        guide = ROOT / "docs" / "api.md"
        steps = [Block(guide, line, "sh", text, None) for line, text in enumerate(texts, 1)]
        return run_guide(steps, reader.base, reader.env, reader.folder)

    for wrong in (
        "curl localhost:8000/api/no-such-thing\n",
        "curl localhost:8000/healthz   # 404: it is not there\n",
        'H="Authorization: Bearer $(cat var/no-such-token)"\n',
    ):
        outcome = pasted(wrong)
        assert not outcome.finished, wrong
        assert outcome.reached == ["docs/api.md:1", "docs/api.md:2"], outcome.output
    said = pasted("curl localhost:8000/api/no-such-thing   # 404: it is not there\n")
    assert said.finished, said.output


def test_every_block_with_commands_says_its_language() -> None:
    """A fence without a language is not run: one holding commands must name its shell."""
    unnamed = [
        block.where
        for guide in GUIDES
        for block in blocks(guide)
        if not block.language and COMMAND.search(block.text)
    ]
    assert unnamed == []


def test_versions_quoted_in_the_guides_are_the_package_s() -> None:
    quoted = {
        (guide.name, found.group(1))
        for guide in GUIDES
        for found in VERSION_QUOTED.finditer(guide.read_text(encoding="utf-8"))
    }
    assert quoted
    assert {version for _, version in quoted} == {installed_version()}, sorted(quoted)
