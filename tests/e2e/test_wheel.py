"""The wheel, installed with its dependencies into a fresh virtual environment, works alone.

Nothing of the source tree or of the test environment is visible to it: a module, data file or
dependency the wheel forgot fails here instead of on a user's machine.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cronledger", "domain", "projections", "tick", "web")
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".*_cache",
    "var",
    "node_modules",  # tools/openapi's npm packages
)
IMPORT_EVERY_MODULE = f"""
import importlib, pkgutil
for name in {PACKAGES!r}:
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
"""
# The console's templates, styles, scripts and Chinese catalogue, found in the installed wheel.
CONSOLE_IN_CHINESE = """
import tempfile
from cronledger.application.services import open_services
from cronledger.config import Settings
from web import create_app
url = "sqlite:///" + tempfile.mkdtemp() + "/cronledger.sqlite"
client = create_app({"SERVICES": open_services(Settings(database_url=url))}).test_client()
page = client.get("/console/sign-in", headers={"Accept-Language": "zh-CN"})
assert page.status_code == 200 and "账号令牌" in page.get_data(as_text=True), page.status_code
for path in ("console.css", "console.js", "vendor/htmx.min.js", "vendor/htmx-ext-sse.min.js"):
    assert client.get("/console/static/" + path).status_code == 200, path
"""
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--quiet"]
# Together below pytest's `timeout` (300 s), which the first test's setup must fit in.
BUILD_SECONDS = 90
INSTALL_SECONDS = 150  # dependencies come from PyPI (pip's cache makes it a few seconds)
COMMAND_SECONDS = 30


def run(args: list[str], cwd: Path, timeout: float, **env: str) -> str:
    """Run a command with PYTHONPATH unset; its standard output, or a failure showing stderr."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        args,
        cwd=cwd,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def imported_modules(source: Path) -> set[str]:
    """The modules every module of the packages imports, in full (relative imports aside); of
    `from a import b`, both `a` and `a.b` (which may be a name, not a module)."""
    names: set[str] = set()
    for path in (p for package in PACKAGES for p in (source / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def imported_distributions(modules: set[str]) -> set[str]:
    """The distributions that install those modules, stdlib's and ours aside. A namespace
    package's (`opentelemetry`, which many distributions share) is the one whose files hold the
    module imported."""
    providers = metadata.packages_distributions()
    found = set()
    for module in modules:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in PACKAGES:
            continue
        names = providers.get(top, [top])
        if len(names) == 1:
            found.add(canonicalize_name(names[0]))
        elif origin := module_file(module):
            found.update(canonicalize_name(n) for n in names if installs(n, origin))
    return found


def module_file(module: str) -> Path | None:
    """Where `module` is installed; None for a name that is not a module, or a namespace."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    origin = spec.origin if spec is not None else None
    return Path(origin).resolve() if origin and origin != "namespace" else None


def installs(distribution: str, path: Path) -> bool:
    files = metadata.distribution(distribution).files or []
    return any(Path(str(f.locate())).resolve() == path for f in files)


def required_distributions(wheel: Path) -> set[str]:
    """What the wheel requires to run, with what the extras it asks for (`psycopg[pool]`) add."""
    archive = zipfile.ZipFile(wheel)
    (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    text = archive.read(name)
    required: set[str] = set()
    for line in Parser().parsestr(text.decode()).get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue  # cronledger's own extras (dev)
        required.add(canonicalize_name(requirement.name))
        for extra in requirement.extras:
            for brought in map(Requirement, metadata.requires(requirement.name) or []):
                if brought.marker and brought.marker.evaluate({"extra": extra}):
                    required.add(canonicalize_name(brought.name))
    return required


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository without its venv, caches and stale `build/` folder.

    Building in the shared tree would write `build/` there and ship whatever is left in it.
    """
    copy = tmp_path_factory.mktemp("wheel") / "source"
    shutil.copytree(ROOT, copy, ignore=NOT_SOURCE)
    return copy


@pytest.fixture(scope="module")
def wheel(source: Path) -> Path:
    dist = source.parent / "dist"
    run([*PIP, "wheel", "--no-deps", "-w", str(dist), str(source)], dist.parent, BUILD_SECONDS)
    (built,) = dist.glob("cronledger-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and its dependencies from PyPI, nothing else (not even
    pip: this environment's pip installs into it, which saves seconds)."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent, COMMAND_SECONDS)
    python = str(venv / "bin" / "python")
    run([*PIP, "--python", python, "install", str(wheel)], venv.parent, INSTALL_SECONDS)
    return venv


def test_the_wheel_holds_every_file_of_the_packages_and_nothing_else(
    wheel: Path, source: Path
) -> None:
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        path.relative_to(source).as_posix()
        for package in PACKAGES
        for path in (source / package).rglob("*")
        if path.is_file()  # the copy left caches and bytecode out
    }
    assert expected - shipped == set()
    top_level = {name.split("/")[0] for name in shipped if not name.startswith("cronledger-")}
    assert top_level == set(PACKAGES)
    assert "cronledger/persistence/ledger.py" in shipped
    assert "cronledger/application/services.py" in shipped


def test_every_imported_distribution_is_declared(wheel: Path, source: Path) -> None:
    """A dependency that only arrives through another one (click through flask) is not enough."""
    imported = imported_distributions(imported_modules(source))
    assert "opentelemetry-instrumentation-flask" in imported  # a namespace package's, found
    assert imported - required_distributions(wheel) == set()


def extra_distributions(wheel: Path, extra: str) -> set[str]:
    """What the wheel's extra `extra` (`dev`) adds."""
    archive = zipfile.ZipFile(wheel)
    (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    lines = Parser().parsestr(archive.read(name).decode()).get_all("Requires-Dist") or []
    return {
        canonicalize_name(requirement.name)
        for requirement in map(Requirement, lines)
        if requirement.marker and requirement.marker.evaluate({"extra": extra})
    }


def test_make_run_installs_what_serving_needs_and_none_of_the_test_toolchain(
    wheel: Path, source: Path
) -> None:
    """`make run` installs the package without extras (what this module's venv holds, and every
    module imports with), never the `dev` extra's test and lint toolchain."""
    dev = extra_distributions(wheel, "dev")
    assert {"pytest", "playwright", "mypy", "schemathesis"} <= dev
    assert required_distributions(wheel) & dev == set()
    planned = run(["make", "-n", "run"], source, COMMAND_SECONDS)
    installs = [line for line in planned.splitlines() if " install " in line and "pip" in line]
    assert installs, planned
    assert [line.split()[-1] for line in installs] == ["setuptools", "."], installs
    assert "[dev]" not in planned


def test_the_installed_package_is_the_wheels(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = Path(run([python, "-c", where], venv.parent, COMMAND_SECONDS).strip())
    found = "import cronledger, sys; print(cronledger.__file__)"
    module = Path(run([python, "-c", found], venv.parent, COMMAND_SECONDS).strip())
    assert module == site_packages / "cronledger" / "__init__.py"


def test_every_module_imports_with_the_declared_dependencies(venv: Path) -> None:
    run([str(venv / "bin" / "python"), "-c", IMPORT_EVERY_MODULE], venv.parent, COMMAND_SECONDS)


def test_the_console_is_served_from_the_wheel_in_chinese(venv: Path) -> None:
    run([str(venv / "bin" / "python"), "-c", CONSOLE_IN_CHINESE], venv.parent, COMMAND_SECONDS)


def test_the_console_script_migrates_and_bootstraps_a_store(venv: Path) -> None:
    cli = str(venv / "bin" / "cronledger")
    cwd = venv.parent
    database = {"CRONLEDGER_DATABASE_URL": f"sqlite:///{cwd}/cronledger.sqlite"}

    assert "bootstrap" in run([cli, "--help"], cwd, COMMAND_SECONDS)
    migrated = run([cli, "migrate"], cwd, COMMAND_SECONDS, **database).splitlines()
    ready, key, event_keys, authenticated = migrated
    assert ready == "store ready (sqlite)"
    assert key.startswith(f"signing key {cwd}/cronledger.sqlite.signing-key.pem created ")
    assert event_keys.startswith(f"event keys {cwd}/cronledger.sqlite.event-keys created ")
    assert authenticated == "events are authenticated from position 1 on"
    out = run(
        [cli, "bootstrap", "--tenant", "acme", "--admin", "root"], cwd, COMMAND_SECONDS, **database
    )

    assert out.splitlines()[-1].startswith("clt_")
    assert (cwd / "cronledger.sqlite").stat().st_size > 0
