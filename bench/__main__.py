"""`make bench`: every benchmark module in this package, one after another."""

from __future__ import annotations

import importlib
import pkgutil

import bench


def main() -> None:
    for module in pkgutil.iter_modules(bench.__path__):
        if module.name.startswith("_"):
            continue
        for line in importlib.import_module(f"bench.{module.name}").run():
            print(line, flush=True)


if __name__ == "__main__":
    main()
