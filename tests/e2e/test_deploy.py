"""deploy/ checked with what this machine can run: the image definition's build and install
commands (from a lock of hashed pins) in a fresh virtual environment and its health check against
the command it runs, the systemd units through `systemd-analyze verify` and `security`, the
Kubernetes manifests through `kubernetes-validate --strict`, and the compose file and manifests
parsed, each command a real `cronledger` command and each probe a path that process's probe
server serves; every layout runs every kind of process and hands each the same
CRONLEDGER_SECRET_KEY by reference, and the same CRONLEDGER_SIGNING_KEY_FILE, mounted where it
points; no layout runs two releases against one store, every image is the code's version, and
the Kubernetes layout stays within PostgreSQL's connections."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from cronledger.application.services import SERVING_KINDS, open_services
from cronledger.cli import main
from cronledger.config import Settings
from cronledger.health import Health
from cronledger.persistence.signing_key import load_signing_key
from cronledger.version import installed_version
from domain.evidence import Checkpoint, public_key_from_pem
from tests.processes import CLI, RUN_SECONDS, environment, free_port
from tests.support import needed, wait_until
from web import create_app
from web.probes import probe_app

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CONTAINERFILE = DEPLOY / "Containerfile"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
INSTALLED_CLI = "/opt/cronledger/bin/cronledger"
LOCAL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)(/[\w/]*)")
# Every process is stopped within the drain and the shutdown bound: orchestrators wait longer.
STOP_BOUND = Settings().drain_seconds + Settings().shutdown_grace_seconds
INSTALL_SECONDS = 240  # dependencies from PyPI (pip's cache makes it a few seconds)
# What every layout runs: each long-running kind of process (`serve` is all of them in one) and
# the one-shot `migrate`.
PROCESSES = {"migrate", "web", "tick", "worker", "sweeper", "projections", "notifier"}
SECRET_KEY = "CRONLEDGER_SECRET_KEY"  # the web and the notifier must derive the same secrets
KEY_FILE = "/etc/cronledger/secret-key.env"  # made apart (cronledger.env.example)
# Every process that signs checkpoints (the projections, the web's bundles, the CLI's) must sign
# with one key: each layout gives every process the same file, made by `migrate` or apart.
SIGNING_KEY = "CRONLEDGER_SIGNING_KEY_FILE"
SIGNING_SECRET = "cronledger-signing-key"  # the Kubernetes Secret made apart (config.yaml)
LOCK = DEPLOY / "requirements.lock"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = re.compile(r"\bcronledger:(\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?)")  # an image's name and tag
# PostgreSQL's default max_connections, less the 3 it reserves for superusers.
CONNECTIONS = 100 - 3
MAX_EXPOSURE = 2.0  # `systemd-analyze security`: 0 is best, 10 worst; below 5.0 reads "OK"


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def cronledger_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in compose()["services"].items() if s["image"].startswith("cronledger")}


def documents() -> Iterator[dict[str, Any]]:
    for path in MANIFESTS:
        yield from (d for d in yaml.safe_load_all(path.read_text()) if d)


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    for document in documents():
        if document["kind"] in ("Deployment", "Job"):
            yield document["metadata"]["name"], document["spec"]["template"]["spec"]


def option(args: list[str], name: str) -> int | None:
    return int(args[args.index(name) + 1]) if name in args else None


def instructions() -> list[tuple[str, str]]:
    """The Containerfile's (instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", CONTAINERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(" ", 1)[0], line.split(" ", 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def unit_commands() -> Iterator[tuple[str, list[str]]]:
    """(unit, arguments after `cronledger`) of every systemd unit."""
    for unit in UNITS:
        (start,) = re.findall(r"^ExecStart=(.*)$", unit.read_text(), re.MULTILINE)
        program, *args = shlex.split(start)
        assert program == INSTALLED_CLI, unit.name
        yield unit.name, args


def every_command() -> Iterator[tuple[str, list[str]]]:
    """(where, arguments after `cronledger`) of every cronledger process deploy/ starts."""
    for name, service in cronledger_services().items():
        yield f"compose service {name}", service["command"]
    for name, spec in pod_specs():
        for container in spec["containers"]:
            yield f"{name} container {container['name']}", container["args"]
    yield from unit_commands()
    cmd = dict(instructions())["CMD"]
    assert json.loads(dict(instructions())["ENTRYPOINT"]) == ["cronledger"]
    yield "Containerfile CMD", json.loads(cmd)


@pytest.mark.parametrize(("where", "args"), list(every_command()))
def test_every_command_is_a_real_cronledger_command(where: str, args: list[str]) -> None:
    """An unknown command or option is a usage error (exit 2) before `--help` is honoured."""
    result = CliRunner().invoke(main, [*args, "--help"], prog_name="cronledger")
    assert result.exit_code == 0, f"{where}: cronledger {' '.join(args)}\n{result.output}"
    assert f"Usage: cronledger {args[0]}" in result.output, where


@pytest.fixture(scope="module")
def served_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """The paths the API serves (`web`, `serve`) and those of the probe server of a loop."""
    folder = tmp_path_factory.mktemp("paths")
    services = open_services(Settings(database_url=f"sqlite:///{folder}/store.sqlite"))
    try:
        app = create_app({"SERVICES": services, "TESTING": True})
        api = {rule.rule for rule in app.url_map.iter_rules()}
    finally:
        services.close()
    probes = {rule.rule for rule in probe_app(Health()).url_map.iter_rules()}
    return {"api": api, "probes": probes}


def probed(args: list[str], port: int, path: str, paths: dict[str, set[str]]) -> str | None:
    """What is wrong with probing `path` on `port` of `cronledger ARGS`, if anything."""
    if port == option(args, "--port"):
        return None if path in paths["api"] else f"the API serves no {path}"
    if port == option(args, "--metrics-port"):
        return None if path in paths["probes"] else f"the probe server serves no {path}"
    return f"cronledger {' '.join(args)} listens on no port {port}"


def test_every_compose_health_check_probes_a_served_path_on_the_probe_server(
    served_paths: dict[str, set[str]],
) -> None:
    """The probe server (`--metrics-port`), which busy API threads cannot hold up: a web
    process busy answering is not restarted for it."""
    for name, service in cronledger_services().items():
        if name == "migrate":
            assert service["command"] == ["migrate"]
            continue
        (url,) = LOCAL_URL.findall(" ".join(service["healthcheck"]["test"]))
        assert probed(service["command"], int(url[0]), url[1], served_paths) is None, name
        assert int(url[0]) == option(service["command"], "--metrics-port"), name
        assert float(service["stop_grace_period"].removesuffix("s")) > STOP_BOUND, name
    assert "postgresql://" in compose()["x-cronledger"]["environment"]["CRONLEDGER_DATABASE_URL"]


def test_every_kubernetes_probe_is_a_served_path_of_the_probe_server(
    served_paths: dict[str, set[str]],
) -> None:
    """On `--metrics-port`, never the API's port (as for compose above)."""
    kinds = {d["kind"] for d in documents()}
    assert {"Deployment", "Service", "ConfigMap", "Secret", "Job", "PodDisruptionBudget"} <= kinds
    deployments = 0
    for name, spec in pod_specs():
        (container,) = spec["containers"]
        assert container["resources"]["requests"], name
        assert container["resources"]["limits"], name
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        if container["args"] == ["migrate"]:
            continue
        deployments += 1
        assert spec["terminationGracePeriodSeconds"] > STOP_BOUND, name
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        for probe, path in (
            ("livenessProbe", "/livez"),
            ("readinessProbe", "/readyz"),
            ("startupProbe", "/livez"),
        ):
            get = container[probe]["httpGet"]
            assert get["path"] == path, (name, probe)
            assert probed(container["args"], ports[get["port"]], path, served_paths) is None
            assert ports[get["port"]] == option(container["args"], "--metrics-port"), name
    assert deployments == len(PROCESSES) - 1  # one Deployment a kind; `migrate` is a Job


def test_every_layout_runs_every_kind_of_process() -> None:
    """A kind of process missing from a layout is work nobody does there (without a `notifier`,
    no webhook is ever sent)."""
    assert (SERVING_KINDS - {"serve"}) | {"migrate"} == PROCESSES
    assert {s["command"][0] for s in cronledger_services().values()} == PROCESSES
    assert {c["args"][0] for _, spec in pod_specs() for c in spec["containers"]} == PROCESSES
    assert {args[0] for _, args in unit_commands()} == PROCESSES


def test_the_units_listen_on_a_port_each() -> None:
    """The units share the machine's loopback: no two may ask for the same port."""
    ports = [
        port
        for _, args in unit_commands()
        for name in ("--port", "--metrics-port")
        if (port := option(args, name)) is not None
    ]
    assert len(ports) == len(set(ports)) == len(PROCESSES) - 1, ports


def test_every_process_gets_the_secret_key_by_reference_never_a_value() -> None:
    """One key for every process, kept outside deploy/: compose interpolates it (and refuses to
    start without it), each pod reads a Secret made apart, each unit a file of its own."""
    interpolated = compose()["x-cronledger"]["environment"][SECRET_KEY]
    assert re.fullmatch(rf"\$\{{{SECRET_KEY}:\?[^}}]+\}}", interpolated), interpolated
    for name, service in cronledger_services().items():
        assert service["environment"][SECRET_KEY] == interpolated, name
    for name, spec in pod_specs():
        (container,) = spec["containers"]
        (variable,) = (v for v in container["env"] if v["name"] == SECRET_KEY)
        reference = {"name": "cronledger-secret-key", "key": SECRET_KEY}
        assert variable == {"name": SECRET_KEY, "valueFrom": {"secretKeyRef": reference}}, name
    for document in documents():
        assert SECRET_KEY not in {**document.get("data", {}), **document.get("stringData", {})}
    for unit in UNITS:
        files = re.findall(r"(?m)^EnvironmentFile=(.*)$", unit.read_text())
        assert files == ["/etc/cronledger/cronledger.env", KEY_FILE], unit.name
    example = (DEPLOY / "systemd" / "cronledger.env.example").read_text()
    assert not re.search(rf"(?m)^\s*{SECRET_KEY}=", example)
    assert all(SECRET_KEY not in arguments for _, arguments in instructions())


def signing_secret_commands() -> tuple[str, str]:
    """The commands config.yaml gives to make the signing key's Secret: openssl's, kubectl's."""
    text = (DEPLOY / "kubernetes" / "config.yaml").read_text()
    (openssl,) = re.findall(r"(?m)^#\s+(.*\bopenssl genpkey .*)$", text)
    (kubectl,) = re.findall(rf"(?m)^#\s+(kubectl create secret generic {SIGNING_SECRET} .*)$", text)
    return openssl, kubectl


def signing_secret_key() -> str:
    """The key of the file in the Secret: `--from-file` names it after the file."""
    (source,) = re.findall(r"--from-file=(\S+)", signing_secret_commands()[1])
    return PurePosixPath(source).name


def image_user_home() -> tuple[str, str]:
    """(uid, home directory) of the user the image's `useradd` makes."""
    (useradd,) = (a for i, a in instructions() if i == "RUN" and a.startswith("useradd"))
    (uid,) = re.findall(r"--uid (\d+)", useradd)
    (home,) = re.findall(r"--home-dir (\S+)", useradd)
    return uid, home


def test_every_compose_service_reads_one_signing_key_on_a_shared_volume() -> None:
    """`migrate` makes the key on a named volume every other service mounts read-only; the
    volume is the image's user's own directory, so that user may write the key there."""
    services = cronledger_services()
    (value,) = {service["environment"][SIGNING_KEY] for service in services.values()}
    path = PurePosixPath(value)
    mounts = set()
    for name, service in services.items():
        (mount,) = (
            m.split(":") for m in service.get("volumes", []) if path.is_relative_to(m.split(":")[1])
        )
        assert mount[0] in compose()["volumes"], name  # a named volume, not a container's own
        assert mount[2:] == ([] if name == "migrate" else ["ro"]), name
        mounts.add(tuple(mount[:2]))
    ((_, target),) = mounts
    uid, home = image_user_home()
    assert target == home  # a new volume takes the owner of the image's directory
    assert dict(instructions())["USER"].split(":")[0] == uid


def pod_settings(container: dict[str, Any]) -> dict[str, str]:
    """The plain values of a container's environment: its ConfigMaps', then its own."""
    maps = {d["metadata"]["name"]: d["data"] for d in documents() if d["kind"] == "ConfigMap"}
    found = {}
    for source in container["envFrom"]:
        if "configMapRef" in source:
            found.update(maps[source["configMapRef"]["name"]])
    found.update({v["name"]: v["value"] for v in container["env"] if "value" in v})
    return found


def test_every_pod_reads_the_signing_key_secret_where_the_setting_points() -> None:
    """The Secret made apart, mounted read-only in every pod, its file readable by the pod's
    user (the file's group is the pod's fsGroup) and no one else's; never in a manifest."""
    paths = set()
    for name, spec in pod_specs():
        (container,) = spec["containers"]
        path = PurePosixPath(pod_settings(container)[SIGNING_KEY])
        paths.add(path)
        (mount,) = (m for m in container["volumeMounts"] if path.is_relative_to(m["mountPath"]))
        assert mount["readOnly"] is True, name
        (volume,) = (v for v in spec["volumes"] if v["name"] == mount["name"])
        secret = volume["secret"]
        assert secret["secretName"] == SIGNING_SECRET, name
        files = {item["key"]: item["path"] for item in secret["items"]}
        assert files[signing_secret_key()] == str(path.relative_to(mount["mountPath"])), name
        assert secret["defaultMode"] & 0o047 == 0o040, name  # group read, nothing for others
        assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsGroup"], name
    assert len(paths) == 1, paths
    for document in documents():
        assert document["metadata"]["name"] != SIGNING_SECRET


def test_the_kubernetes_manifests_pass_kubernetes_validate_strict() -> None:
    """Against Kubernetes' own schemas (bundled with kubernetes-validate, a dev dependency),
    every field known: a misspelt or misplaced one is refused, not ignored by the API server."""
    validate = Path(sys.executable).parent / "kubernetes-validate"
    result = subprocess.run(
        [str(validate), "--strict", "--quiet", *map(str, MANIFESTS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def deployments() -> list[dict[str, Any]]:
    return [d for d in documents() if d["kind"] == "Deployment"]


def selects(match: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in match.items())


def selector_selects(selector: str, labels: dict[str, str]) -> bool:
    """kubectl's `--selector` (`key=value` and `key!=value`, comma-separated) on `labels`."""
    for term in selector.split(","):
        key, wanted = re.split(r"!?=", term, maxsplit=1)
        if (labels.get(key) == wanted) == ("!=" in term):
            return False
    return True


def upgrade_commands() -> list[list[str]]:
    """The commands migrate-job.yaml gives for a release, in order."""
    text = (DEPLOY / "kubernetes" / "migrate-job.yaml").read_text()
    return [shlex.split(line) for line in re.findall(r"(?m)^#\s+(kubectl .*)$", text)]


def value_of(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def applied(args: list[str]) -> set[str]:
    return {PurePosixPath(args[i + 1]).name for i, arg in enumerate(args) if arg == "-f"}


def test_a_release_never_runs_two_releases_against_one_store() -> None:
    """An old process cannot read what a newer one writes (docs/operations.md#upgrading). A
    Deployment's rolling update would run both releases of its kind at once; `Recreate` stops
    the old pods first. And the documented release stops every kind before migrating, and
    starts the new ones only once the release's own migration Job is complete."""
    for deployment in deployments():
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, deployment["metadata"]
    pods = [d["spec"]["template"]["metadata"]["labels"] for d in deployments()]
    (job,) = (d for d in documents() if d["kind"] == "Job")
    with_deployments = {
        path.name
        for path in MANIFESTS
        if any(d and d["kind"] == "Deployment" for d in yaml.safe_load_all(path.read_text()))
    }

    scale, wait_for_pods, apply_job, wait_for_job, start = upgrade_commands()

    assert scale[:3] == ["kubectl", "scale", "deployment"]
    assert "--replicas=0" in scale
    assert all(
        selector_selects(value_of(scale, "--selector"), d["metadata"]["labels"])
        for d in deployments()
    )
    assert wait_for_pods[:4] == ["kubectl", "wait", "--for=delete", "pod"]
    gone = value_of(wait_for_pods, "--selector")
    assert all(selector_selects(gone, labels) for labels in pods)
    # A finished Job's pod stays (a day): waiting for it to go would wait a day.
    assert not selector_selects(gone, job["spec"]["template"]["metadata"]["labels"])
    assert "migrate-job.yaml" in applied(apply_job)
    assert not applied(apply_job) & with_deployments
    assert wait_for_job[:3] == ["kubectl", "wait", "--for=condition=complete"]
    assert f"job/{job['metadata']['name']}" in wait_for_job
    assert applied(start) == with_deployments


def test_the_ticks_never_share_a_node_and_a_drain_leaves_one_of_each_kind_running() -> None:
    """Two ticks on one node would both go with it. A node drain evicts one pod of a kind with
    two at a time (a PodDisruptionBudget), never both, and never stalls on one."""
    budgets = [d["spec"] for d in documents() if d["kind"] == "PodDisruptionBudget"]
    for deployment in deployments():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [b for b in budgets if selects(b["selector"]["matchLabels"], labels)]
        if deployment["spec"]["replicas"] > 1:
            (budget,) = covering
            assert 1 <= budget["minAvailable"] < deployment["spec"]["replicas"]
    (tick,) = (d for d in deployments() if d["metadata"]["name"] == "cronledger-tick")
    affinity = tick["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert selects(
        term["labelSelector"]["matchLabels"], tick["spec"]["template"]["metadata"]["labels"]
    )
    assert tick["spec"]["replicas"] >= 2


def test_every_pod_runs_unprivileged_on_a_read_only_root() -> None:
    for name, spec in pod_specs():
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        (container,) = spec["containers"]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }, name
        (tmp,) = (m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
        (volume,) = (v for v in spec["volumes"] if v["name"] == tmp["name"])
        assert "emptyDir" in volume, name


def connections(container: dict[str, Any]) -> int:
    """The most connections one pod opens (docs/deployment.md#how-many-connections): each of
    its processes 2 × (pool size + overflow), and 2 of its own (a LISTEN, a lock or a probe)."""
    settings, defaults = pod_settings(container), Settings()
    size = int(settings.get("CRONLEDGER_POOL_SIZE", defaults.pool_size))
    overflow = int(settings.get("CRONLEDGER_POOL_OVERFLOW", defaults.pool_overflow))
    processes = option(container["args"], "--workers") or (
        int(settings.get("CRONLEDGER_WEB_WORKERS", defaults.web_workers))
        if container["args"][0] == "web"
        else 1
    )
    return processes * (2 * (size + overflow) + 2)


def test_the_kubernetes_layout_stays_within_postgresql_connections() -> None:
    """Every pod at once, the migrate Job too: below PostgreSQL's default max_connections (100,
    3 of them reserved), as config.yaml's comment counts them, the loops with pools of 1 + 1."""
    counted: dict[str, tuple[int, int]] = {}
    for document in documents():
        if document["kind"] in ("Deployment", "Job"):
            (container,) = document["spec"]["template"]["spec"]["containers"]
            replicas = document["spec"].get("replicas", document["spec"].get("parallelism", 1))
            counted[container["args"][0]] = (replicas, connections(container))
            if container["args"][0] != "web":
                settings = pod_settings(container)
                pools = (settings["CRONLEDGER_POOL_SIZE"], settings["CRONLEDGER_POOL_OVERFLOW"])
                assert pools == ("1", "1"), container["name"]
    total = sum(replicas * each for replicas, each in counted.values())
    comment = (DEPLOY / "kubernetes" / "config.yaml").read_text()
    (sum_line,) = re.findall(r"(?m)^#\s+(web .*)$", comment)
    said = {
        kind: (int(replicas or 1), int(each))
        for kind, replicas, each in re.findall(r"(\w+) (?:(\d+) × )?(\d+)", sum_line)
    }
    (said_total,) = re.findall(r"= (\d+) connections at most", comment)

    assert said == counted
    assert int(said_total) == total <= CONNECTIONS


def image_tags() -> list[str]:
    images = [service["image"] for service in cronledger_services().values()]
    images += [c["image"] for _, spec in pod_specs() for c in spec["containers"]]
    return images


def test_every_image_is_the_release_of_the_code() -> None:
    """The compose file, the manifests, the build command and the docs name the image of the
    version in pyproject.toml (what `cronledger --version` says): a release bumps them all."""
    assert installed_version() == VERSION
    assert image_tags()
    assert set(image_tags()) == {f"cronledger:{VERSION}"}
    named = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(DEPLOY.rglob("*"))]
    mentioned = [
        (str(path.relative_to(ROOT)), version)
        for path in named
        if path.is_file()
        for version in IMAGE.findall(path.read_text())
    ]
    assert mentioned
    assert {version for _, version in mentioned} == {VERSION}, mentioned
    (job,) = (d for d in documents() if d["kind"] == "Job")
    assert job["metadata"]["name"] == f"cronledger-migrate-{VERSION}"


def lock_pins() -> dict[str, tuple[str, int]]:
    """Each requirement of deploy/requirements.lock: its name, pinned version, hashes."""
    pins: dict[str, tuple[str, int]] = {}
    name = ""
    for line in LOCK.read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            requirement = Requirement(line.rstrip(" \\"))
            (pin,) = requirement.specifier
            assert pin.operator == "==", line
            name = canonicalize_name(requirement.name)
            pins[name] = (pin.version, 0)
        elif line.strip().startswith("--hash=sha256:"):
            pins[name] = (pins[name][0], pins[name][1] + 1)
    return pins


def test_the_image_installs_what_pyproject_asks_for_from_hashed_pins() -> None:
    """Every dependency of the package (and of the extras it asks for) pinned in the lock, in
    its range, each with the hashes of its files; the image installs the lock with
    `--require-hashes` and the package's own wheel with nothing more."""
    pins = lock_pins()
    assert pins
    assert all(hashes for _, hashes in pins.values()), pins
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["dependencies"]:
        requirement = Requirement(line)
        version, _ = pins[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version, prereleases=True), (line, version)
        for extra in requirement.extras:
            for needed_line in metadata.requires(requirement.name) or []:
                needs = Requirement(needed_line)
                if needs.marker and needs.marker.evaluate({"extra": extra}):
                    assert canonicalize_name(needs.name) in pins, (line, needed_line)
    runs = " ".join(arguments for instruction, arguments in instructions() if instruction == "RUN")
    assert "pip install --require-hashes -r requirements.lock" in runs
    assert "pip install --no-deps /wheels/cronledger-" in runs
    copied = [a.split() for i, a in instructions() if i == "COPY" and "--from" not in a]
    assert any(str(LOCK.relative_to(ROOT)) in sources for sources in copied)


def test_every_unit_reads_the_signing_key_the_migrate_unit_makes() -> None:
    """The settings every unit reads name one file in the units' state directory, which
    `cronledger migrate` makes (owner read only) as the user every unit runs as."""
    example = (DEPLOY / "systemd" / "cronledger.env.example").read_text()
    (value,) = re.findall(rf"(?m)^{SIGNING_KEY}=(.*)$", example)
    path = PurePosixPath(value)
    users = set()
    for unit in UNITS:
        text = unit.read_text()
        (state,) = re.findall(r"(?m)^StateDirectory=(.*)$", text)
        assert path.parent == PurePosixPath("/var/lib") / state, unit.name
        assert path.parent in map(PurePosixPath, re.findall(r"(?m)^ReadWritePaths=(.*)$", text))
        users.update(re.findall(r"(?m)^User=(.*)$", text))
    assert len(users) == 1, users


def test_the_documented_signing_key_is_the_one_migrate_keeps_and_checkpoints_use(
    store_url: str, tmp_path: Path
) -> None:
    """A key made as config.yaml says (`openssl genpkey`) is loaded, not replaced, by
    `cronledger migrate`, printed by `audit public-key` and signs the checkpoints."""
    openssl = shutil.which("openssl")
    needed(None if openssl else "openssl is not installed here")
    assert openssl is not None
    made, _ = signing_secret_commands()
    subprocess.run(made, shell=True, cwd=tmp_path, check=True, timeout=RUN_SECONDS)
    key_file = tmp_path / signing_secret_key()
    pem = key_file.read_bytes()
    key = load_signing_key(key_file)
    assert key is not None
    env = environment(store_url, **{SIGNING_KEY: str(key_file)})

    def cronledger(*args: str) -> str:
        done = subprocess.run(
            [CLI, *args], env=env, capture_output=True, text=True, timeout=RUN_SECONDS
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert f"signing key {key_file} (key id {key.key_id})" in cronledger("migrate")
    assert key_file.read_bytes() == pem
    public = subprocess.run(
        [openssl, "pkey", "-in", key_file, "-pubout"], capture_output=True, check=True
    ).stdout
    assert cronledger("audit", "public-key").encode() == public
    cronledger("bootstrap", "--tenant", "acme", "--admin", "root")
    latest = json.loads(cronledger("audit", "checkpoints", "--latest", "--export"))
    Checkpoint.from_json(latest).check_signature(public_key_from_pem(public))


def systemd_analyze() -> str:
    analyze = shutil.which("systemd-analyze")
    needed(None if analyze else "systemd-analyze is not installed here (Debian's `systemd`)")
    assert analyze is not None
    return analyze


def units_as_installed_here(folder: Path) -> list[Path]:
    """The units, with the program and the settings file where they are on this machine."""
    environment_file = folder / "cronledger.env"
    environment_file.write_text((DEPLOY / "systemd" / "cronledger.env.example").read_text())
    written = []
    for unit in UNITS:
        text = unit.read_text().replace(
            INSTALLED_CLI, str(Path(sys.executable).parent / "cronledger")
        )
        text = re.sub(r"(?m)^EnvironmentFile=.*$", f"EnvironmentFile={environment_file}", text)
        (folder / unit.name).write_text(text)
        written.append(folder / unit.name)
    return written


def directives(unit: Path) -> dict[str, list[str]]:
    """Each directive of a unit file and its values, in order."""
    found: dict[str, list[str]] = {}
    for line in unit.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_the_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = systemd_analyze()
    units = units_as_installed_here(tmp_path)
    for unit in units:
        found = directives(unit)
        if found["Type"] != ["oneshot"]:
            assert int(found["TimeoutStopSec"][0]) > STOP_BOUND, unit.name
            assert found["Restart"] == ["always"], unit.name
    result = subprocess.run(
        [analyze, "verify", "--man=no", *map(str, units)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr


def test_every_systemd_unit_is_sandboxed(tmp_path: Path) -> None:
    """`systemd-analyze security` rates what a unit's process may do to the machine (0 none,
    10 everything: these units rated 8.5 "EXPOSED" before their sandboxing)."""
    analyze = systemd_analyze()
    for unit in units_as_installed_here(tmp_path):
        result = subprocess.run(
            [analyze, "security", "--offline=true", "--no-pager", str(unit)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        (level,) = re.findall(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
        assert float(level) <= MAX_EXPOSURE, f"{unit.name}: {level}\n{result.stdout}"


def test_the_migrate_unit_is_tried_again_and_every_unit_waits_for_it() -> None:
    """Every unit Requires= and comes After= the migrations: one that failed (PostgreSQL not up
    yet) must try again, or nothing starts; once done it stays active for them."""
    (migrate,) = (u for u in UNITS if directives(u)["ExecStart"][0].endswith(" migrate"))
    found = directives(migrate)
    assert found["Type"] == ["oneshot"]
    assert found["RemainAfterExit"] == ["yes"]
    assert found["Restart"] == ["on-failure"]
    assert int(found["RestartSec"][0]) > 0
    assert int(found["StartLimitBurst"][0]) > 1
    for unit in UNITS:
        if unit != migrate:
            assert migrate.name in directives(unit)["Requires"][0].split(), unit.name
            assert migrate.name in directives(unit)["After"][0].split(), unit.name


@pytest.mark.slow
def test_the_image_builds_installs_and_answers_its_health_check(tmp_path: Path) -> None:
    """The Containerfile's COPY and RUN lines, done in temporary folders on this machine: the
    wheel built from what the build stage copies, installed in a fresh venv, its CMD served and
    probed by the HEALTHCHECK's own command. `useradd` (root only) is the one line not run."""
    places = {"/src": tmp_path / "src", "/wheels": tmp_path / "wheels"}
    places["/opt/cronledger"] = tmp_path / "venv"
    bin_dir = tmp_path / "bin"  # the image's `python`: this interpreter
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ["PATH"] = f"{bin_dir}:{environ['PATH']}"
    workdir, skipped, healthcheck, cmd = places["/src"], [], "", ""
    for instruction, arguments in instructions():
        for inside, outside in places.items():
            arguments = arguments.replace(inside, str(outside))
        if instruction == "WORKDIR":
            workdir = Path(arguments)
            workdir.mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY" and "--from" not in arguments:
            *sources, target = arguments.split()
            for source in sources:
                copy = shutil.copytree if (ROOT / source).is_dir() else shutil.copy
                copy(ROOT / source, workdir / target / (source if target == "." else ""))
        elif instruction == "RUN" and "pip" in arguments:
            subprocess.run(
                arguments, shell=True, cwd=workdir, env=environ, check=True, timeout=INSTALL_SECONDS
            )
        elif instruction == "RUN":
            skipped.append(arguments)
        elif instruction == "HEALTHCHECK":
            healthcheck = arguments.split(" CMD ", 1)[1]
        elif instruction == "CMD":
            cmd = arguments
    assert [s.split()[0] for s in skipped] == ["useradd"]
    cli = places["/opt/cronledger"] / "bin" / "cronledger"
    version = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("cronledger ")
    port = free_port()
    args = [a if a != "8000" else str(port) for a in json.loads(cmd)]
    args = [a if a != "0.0.0.0" else "127.0.0.1" for a in args]
    venv_env = {
        **environ,
        "PATH": f"{cli.parent}:{environ['PATH']}",
        "CRONLEDGER_DRAIN_SECONDS": "0.1",
    }
    venv_env["CRONLEDGER_DATABASE_URL"] = f"sqlite:///{tmp_path}/store.sqlite"
    venv_env["PROBE_URL"] = f"http://127.0.0.1:{port}/livez"
    server = subprocess.Popen(
        [cli, *args],
        env=venv_env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        probe = json.loads(healthcheck)

        def healthy() -> bool:
            result = subprocess.run(probe, env=venv_env, capture_output=True, check=False)
            return result.returncode == 0

        wait_until(healthy, "healthy by the image's HEALTHCHECK")
    finally:
        server.terminate()
        server.wait(timeout=60)
