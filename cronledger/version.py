"""The release a process runs: the installed distribution's version, from pyproject.toml.

`cronledger --version`, `GET /healthz` and the OpenAPI document all show it; CHANGELOG.md says
what each release changed.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata

DISTRIBUTION = "cronledger"


@cache
def installed_version() -> str:
    """The version pip installed (`pip show cronledger`); "unknown" when run from a bare tree."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
