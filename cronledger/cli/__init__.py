"""The `cronledger` command line (docs/configuration.md lists every command): the one place
that wires the store, the services, the web app and the loops together.

`main` is the command group; each module adds its commands to it when imported.
"""

from cronledger.cli import admin, audit, evidence, processes  # noqa: F401 (they add commands)
from cronledger.cli.base import main

__all__ = ["main"]
