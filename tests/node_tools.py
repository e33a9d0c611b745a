"""tools/openapi: the pinned npm packages the OpenAPI tests use (Redocly CLI, swagger-ui-dist,
openapi-typescript, openapi-fetch, typescript).

They are installed with `npm ci` from the lock file the first time a test needs them, and again
when the lock file changes. Without node and npm such a test is skipped, and fails under CI=true.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.support import needed

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "openapi"
INSTALL_SECONDS = 240  # below pytest's timeout; a few seconds once npm's cache holds the packages


def node() -> str:
    """The path of `node`, after making sure tools/openapi's packages are installed."""
    found = {name: shutil.which(name) for name in ("node", "npm")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        needed(f"{' and '.join(missing)} not found: tools/openapi needs Node.js 20 and npm")
    _install(str(found["npm"]))
    return str(found["node"])


def _install(npm: str) -> None:
    """`npm ci` unless node_modules was installed from this very lock file; one at a time."""
    lock = hashlib.sha256((TOOLS / "package-lock.json").read_bytes()).hexdigest()
    stamp = TOOLS / "node_modules" / ".installed-from-lock"
    with (TOOLS / ".install.lock").open("w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == lock:
            return
        result = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=TOOLS,
            capture_output=True,
            text=True,
            timeout=INSTALL_SECONDS,
            check=False,
        )
        assert result.returncode == 0, f"npm ci in {TOOLS} failed:\n{result.stderr}"
        stamp.write_text(lock)
