"""`make audit-deps`: pip-audit over this environment, skipped when no advisory source answers.

Exit 1 on any known vulnerability, or on a pip-audit failure that is not a network one.
Exit 0 with a "skipped" message when the advisory service cannot be reached: pip-audit then
either fails to connect, or (PyPI's JSON API missing behind a mirror) reports every package
as "not found" and would otherwise print a false "No known vulnerabilities found".
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

COMMAND = [
    sys.executable,
    "-m",
    "pip_audit",
    "--format=json",
    "--progress-spinner=off",
    "--skip-editable",  # cronledger itself, not a published package
]
NETWORK_ERRORS = ("ConnectionError", "NameResolutionError", "ConnectTimeout", "ReadTimeout")


def vulnerable(report: dict[str, Any]) -> list[str]:
    """One line per known vulnerability: package, version, advisory and fixed versions."""
    return [
        f"{d['name']} {d['version']}: {v['id']} (fixed in {', '.join(v['fix_versions']) or '-'})"
        for d in report["dependencies"]
        for v in d.get("vulns", [])
    ]


def audited(report: dict[str, Any]) -> int:
    """How many dependencies the advisory service actually answered for."""
    return sum(1 for d in report["dependencies"] if "skip_reason" not in d)


def main() -> int:
    command = [*COMMAND, *sys.argv[1:]]  # e.g. --vulnerability-service=osv
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        if any(error in done.stderr for error in NETWORK_ERRORS):
            print("audit-deps skipped: the advisory service cannot be reached")
            return 0
        print(done.stderr, file=sys.stderr)
        return done.returncode or 1
    findings = vulnerable(report)
    if findings:
        print("known vulnerabilities:", *findings, sep="\n  ")
        return 1
    if not audited(report):
        print("audit-deps skipped: the advisory service answered for no package (unreachable?)")
        return 0
    print(f"audit-deps: no known vulnerability in {audited(report)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
