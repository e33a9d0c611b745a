"""Files of secrets (the signing key, the event keys): only their owner may read them, and each
is written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _owner_only_copy(path: Path, data: bytes) -> str:
    """A temporary file beside `path`, the owner's alone (mkstemp's mode), holding `data`."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, written = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    return written


def create_once(path: Path, data: bytes) -> bool:
    """`path` made to hold `data`, unless it exists (a hard link never replaces a file): whether
    this call made it."""
    written = _owner_only_copy(path, data)
    try:
        os.link(written, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(written)
    return True


def replace_whole(path: Path, data: bytes) -> None:
    """`path` holding `data` from now on, never half written."""
    os.replace(_owner_only_copy(path, data), path)
