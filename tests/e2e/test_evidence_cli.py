"""The evidence commands as an operator and an auditor run them (issue 21): the signing key,
bundles verified offline with no store, saved checkpoints, consistency, and refusals."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from uuid import UUID

import pytest

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.persistence.ledger import jsonable
from cronledger.persistence.signing_key import (
    create_signing_key,
    load_signing_key,
    signing_key_path,
)
from cronledger.persistence.store import Store
from domain.approvals import Command, Submission
from domain.directory import Principal, tenant_uuid
from domain.evidence import key_id_of, public_key_from_pem
from domain.triggers import load_zone
from tests.processes import environment, free_port, run_in
from tests.support import FakeClock, World

SHANGHAI = load_zone("Asia/Shanghai")


@pytest.fixture
def key_env(store_url: str, tmp_path: Path) -> dict[str, str]:
    """On PostgreSQL, the signing key in the test's directory (its default is under the working
    directory); on SQLite, the default: beside the store's file."""
    if store_url.startswith("sqlite"):
        return {}
    return {"CRONLEDGER_SIGNING_KEY_FILE": str(tmp_path / "keys" / "signing-key.pem")}


@pytest.fixture
def key_path(store_url: str, key_env: dict[str, str]) -> Path:
    return signing_key_path(
        key_env.get("CRONLEDGER_SIGNING_KEY_FILE", ""), Store.from_url(store_url)
    )


@pytest.fixture
def env(store_url: str, key_env: dict[str, str]) -> dict[str, str]:
    """The environment of commands run on the test's store."""
    return environment(store_url, **key_env)


@pytest.fixture
def demo(store_url: str, key_env: dict[str, str], key_path: Path) -> Iterator[Services]:
    """Services with a signing key, on a store holding tenant `demo`, at a fixed clock."""
    create_signing_key(key_path)
    setting = key_env.get("CRONLEDGER_SIGNING_KEY_FILE", "")
    opened = open_services(Settings(database_url=store_url, signing_key_file=setting), FakeClock())
    opened.directory.bootstrap("demo", "admin")
    yield opened
    opened.close()


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cronledger(tmp_path: Path) -> Run:
    """`cronledger ARGS` in an environment, finished, run in a directory of the test's (what it
    would make under its working directory never lands in the checkout); what it printed and
    logged goes to the log scan."""
    where = tmp_path / "cwd"
    where.mkdir()

    def run(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return run_in(env, where, *args)

    return run


def offline(**settings: str) -> dict[str, str]:
    """An environment without any CRONLEDGER_ variable, but `settings`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("CRONLEDGER_")}
    return {**kept, **settings}


def saved(tmp_path: Path, name: str, done: subprocess.CompletedProcess[str]) -> Path:
    assert done.returncode == 0, done.stdout + done.stderr
    path = tmp_path / name
    path.write_text(done.stdout)
    return path


def test_migrate_makes_the_signing_key_once_and_public_key_prints_it(
    cronledger: Run, env: dict[str, str], key_path: Path
) -> None:
    refused = cronledger(env, "audit", "public-key")
    assert refused.returncode == 1
    assert f"no signing key at {key_path}" in refused.stderr
    assert "cronledger migrate" in refused.stderr

    first = cronledger(env, "migrate")
    assert first.returncode == 0, first.stderr
    key = load_signing_key(key_path)
    assert key is not None
    assert f"signing key {key_path} created (key id {key.key_id})" in first.stdout
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    pem = key_path.read_bytes()

    again = cronledger(env, "migrate")
    assert again.returncode == 0, again.stderr
    assert f"signing key {key_path} (key id {key.key_id})" in again.stdout
    assert key_path.read_bytes() == pem

    printed = cronledger(env, "audit", "public-key")
    assert printed.returncode == 0, printed.stderr
    assert key_id_of(public_key_from_pem(printed.stdout.encode())) == key.key_id


def test_a_bundle_verifies_with_no_store_and_proves_the_log_only_grew(
    cronledger: Run, demo: Services, env: dict[str, str], tmp_path: Path
) -> None:
    tenant = str(tenant_uuid("demo"))
    key = demo.evidence.key
    assert key is not None
    public = tmp_path / "public.pem"
    public.write_text(key.public_pem())
    first = saved(tmp_path, "first.json", cronledger(env, "audit", "bundle", tenant))
    old = saved(
        tmp_path, "old.json", cronledger(env, "audit", "checkpoints", "--export", "--latest")
    )
    demo.pauses.pause_tenant(Principal(UUID(tenant), "system:test", frozenset()), "more")
    second = saved(
        tmp_path, "second.json", cronledger(env, "audit", "bundle", tenant, "--since", str(old))
    )
    every = saved(tmp_path, "all.json", cronledger(env, "audit", "checkpoints", "--export"))
    sizes = [c["tree_size"] for c in json.loads(every.read_text())["checkpoints"]]
    newest = json.loads(second.read_text())["checkpoint"]["tree_size"]
    assert sizes == [json.loads(old.read_text())["tree_size"], newest]

    verified = cronledger(
        offline(), "audit", "verify-bundle", str(first), "--public-key", str(public), "--tz",
        "Asia/Shanghai",
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    timeline = demo.audit.timeline(tenant)
    for entry in timeline[:2]:
        local = entry.at.astimezone(SHANGHAI).isoformat()
        line = f"#{entry.position} v{entry.log_version} {entry.type} {local} ({jsonable(entry.at)})"
        assert line in verified.stdout
    assert f"verified: 2 events of {tenant} proven in the signed log of tree size" in (
        verified.stdout
    )

    bogus = offline(CRONLEDGER_DATABASE_URL=f"postgresql://127.0.0.1:{free_port()}/none")
    grown = cronledger(
        bogus, "audit", "verify-bundle", str(second), "--public-key", str(public),
        "--checkpoint", str(old),
    )  # fmt: skip
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert "the log only grew since the saved checkpoint" in grown.stdout
    assert f"#{timeline[2].position} v3 Tenant.SchedulesPaused" in grown.stdout

    backwards = cronledger(env, "audit", "consistency", str(every), str(old))
    assert backwards.returncode == 2
    assert f"OLD (tree size {sizes[1]}) is newer than NEW (tree size {sizes[0]})" in (
        backwards.stderr
    )
    consistent = cronledger(env, "audit", "consistency", str(old), str(every))
    assert consistent.returncode == 0, consistent.stdout + consistent.stderr
    assert consistent.stdout.strip() == (
        f"consistent: the log of tree size {sizes[1]} extends the one of tree size {sizes[0]}"
    )


def test_a_bundle_of_another_key_or_altered_is_refused(
    cronledger: Run, demo: Services, env: dict[str, str], tmp_path: Path
) -> None:
    account = cronledger(env, "audit", "bundle", "admin", "--tenant", "demo")
    bundle = json.loads(saved(tmp_path, "bundle.json", account).read_text())
    other = create_signing_key(tmp_path / "other" / "key.pem")
    (tmp_path / "other.pem").write_text(other.public_pem())
    ours = demo.evidence.key
    assert ours is not None

    refused = cronledger(
        offline(), "audit", "verify-bundle", str(tmp_path / "bundle.json"), "--public-key",
        str(tmp_path / "other.pem"),
    )  # fmt: skip
    assert refused.returncode == 1
    assert ours.key_id in refused.stderr
    assert other.key_id in refused.stderr

    altered = bundle["events"][1]
    state = bytearray(base64.b64decode(altered["state"]))
    state[len(state) // 2] ^= 1
    altered["state"] = base64.b64encode(bytes(state)).decode()
    (tmp_path / "altered.json").write_text(json.dumps(bundle))
    (tmp_path / "ours.pem").write_text(ours.public_pem())
    failed = cronledger(
        offline(), "audit", "verify-bundle", str(tmp_path / "altered.json"), "--public-key",
        str(tmp_path / "ours.pem"), "--json",
    )  # fmt: skip
    assert failed.returncode == 1, failed.stdout + failed.stderr
    report = json.loads(failed.stdout)
    assert report["verified"] is False
    assert [p.split(" ")[1] for p in report["problems"]] == [str(altered["position"])]
    assert altered["position"] not in [e["position"] for e in report["events"]]

    (tmp_path / "deep.json").write_text("[" * 100_000)  # a hostile file: one clear line
    deep = cronledger(
        offline(), "audit", "verify-bundle", str(tmp_path / "deep.json"), "--public-key",
        str(tmp_path / "ours.pem"),
    )  # fmt: skip
    assert deep.returncode == 1
    deep_file = tmp_path / "deep.json"
    assert deep.stderr.strip() == f"Error: {deep_file} is nested too deeply to be evidence"


@pytest.fixture
def acme(store_url: str, key_env: dict[str, str], key_path: Path) -> Iterator[World]:
    """Services with a signing key, on a store holding tenant `acme` (World), ann's waiting
    instance `asked` in it."""
    create_signing_key(key_path)
    setting = key_env.get("CRONLEDGER_SIGNING_KEY_FILE", "")
    clock = FakeClock()
    opened = open_services(Settings(database_url=store_url, signing_key_file=setting), clock)
    yield World(opened, clock)
    opened.close()


def test_checkpoints_are_appended_once_each_and_never_rewritten(
    cronledger: Run, demo: Services, env: dict[str, str], tmp_path: Path
) -> None:
    kept = tmp_path / "kept.jsonl"
    first = cronledger(env, "audit", "checkpoints", "--latest", "--append", str(kept))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "appended 1 checkpoint(s)" in first.stdout
    written = kept.read_bytes()
    again = cronledger(env, "audit", "checkpoints", "--append", str(kept))
    assert again.returncode == 0, again.stderr
    assert "is up to date" in again.stdout
    assert kept.read_bytes() == written

    tenant = Principal(tenant_uuid("demo"), "system:test", frozenset())
    demo.pauses.pause_tenant(tenant, "more")
    grown = cronledger(env, "audit", "checkpoints", "--latest", "--append", str(kept))
    assert grown.returncode == 0, grown.stdout + grown.stderr
    lines = kept.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[:1]) == written
    sizes = [json.loads(line)["tree_size"] for line in lines]
    assert len(sizes) == 2
    assert sizes[0] < sizes[1]
    assert f"tree sizes {sizes[1]} to {sizes[1]}" in grown.stdout

    other = create_signing_key(tmp_path / "other" / "key.pem")
    (tmp_path / "other.pem").write_text(other.public_pem())
    demo.pauses.resume_tenant(tenant, "less")
    refused = cronledger(
        env, "audit", "checkpoints", "--latest", "--append", str(kept), "--public-key",
        str(tmp_path / "other.pem"),
    )  # fmt: skip
    assert refused.returncode == 1
    assert "NOT appended" in refused.stderr
    assert other.key_id in refused.stderr
    assert kept.read_bytes().splitlines(keepends=True) == lines

    forged = json.loads(lines[-1])
    forged["root_hash"] = "00" * 32  # a line altered after it was kept
    altered = tmp_path / "altered.jsonl"
    altered.write_bytes(lines[0] + (json.dumps(forged) + "\n").encode())
    bad = cronledger(env, "audit", "checkpoints", "--append", str(altered))
    assert bad.returncode == 1
    assert "is not valid" in bad.stderr
    assert altered.read_bytes().count(b"\n") == 2


def test_verify_bundle_tells_each_event_s_fields_and_what_it_cannot_prove(
    cronledger: Run, acme: World, env: dict[str, str], tmp_path: Path
) -> None:
    services, root = acme.services, acme.root
    key = services.evidence.key
    assert key is not None
    public = tmp_path / "public.pem"
    public.write_text(key.public_pem())
    ann = services.directory.authenticate(services.directory.issue_token(root, "ann").token)
    assert ann is not None
    asked, _ = services.approvals.submit(
        ann, Submission("ask", acme.definition, "Ask", {}, 1, None)
    )
    kept = tmp_path / "kept.jsonl"
    assert (
        cronledger(env, "audit", "checkpoints", "--latest", "--append", str(kept)).returncode == 0
    )
    waiting = saved(tmp_path, "waiting.json", cronledger(env, "audit", "bundle", asked.id))
    services.approvals.command(root, asked.id, Command("approve", "a1", {"material_version": 1}))
    decided = saved(
        tmp_path, "decided.json",
        cronledger(env, "audit", "bundle", asked.id, "--since", str(kept)),
    )  # fmt: skip
    events = json.loads(decided.read_text())["events"]
    approved = json.loads(base64.b64decode(events[-1]["state"]))
    assert approved["outcome"] == "APPROVED"

    text = cronledger(
        offline(), "audit", "verify-bundle", str(decided), "--public-key", str(public),
        "--checkpoint", str(kept),
    )  # fmt: skip
    assert text.returncode == 0, text.stdout + text.stderr
    assert "    outcome: APPROVED" in text.stdout
    assert f"    reason: {approved['reason']}" in text.stdout
    assert f"    reason_code: {approved['reason_code']}" in text.stdout
    assert "    command_id: a1" in text.stdout
    position = events[-1]["position"]
    assert f"warning: positions {position} to {position} come after your saved" in text.stdout
    assert "may have later events" not in text.stdout  # approved: the instance is over

    as_json = cronledger(
        offline(), "audit", "verify-bundle", str(decided), "--public-key", str(public),
        "--checkpoint", str(kept), "--json",
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    last = report["events"][-1]
    assert (last["outcome"], last["command_id"]) == ("APPROVED", "a1")
    assert (last["reason"], last["reason_code"]) == (approved["reason"], approved["reason_code"])
    assert last["fields"]["payload"] == approved["payload"]
    assert len(report["warnings"]) == 1
    assert "come after your saved checkpoint" in report["warnings"][0]

    earlier = cronledger(
        offline(), "audit", "verify-bundle", str(waiting), "--public-key", str(public), "--json"
    )
    assert earlier.returncode == 0, earlier.stderr
    warned = json.loads(earlier.stdout)["warnings"]
    assert len(warned) == 1
    assert "may have later events than this bundle holds" in warned[0]
    assert json.loads(earlier.stdout)["events"][0]["fields"]["title"] == "Ask"


def test_a_bundle_with_its_linked_instances_verifies_offline(
    cronledger: Run, acme: World, env: dict[str, str], tmp_path: Path
) -> None:
    services, root = acme.services, acme.root
    key = services.evidence.key
    assert key is not None
    public = tmp_path / "public.pem"
    public.write_text(key.public_pem())
    ann = services.directory.authenticate(services.directory.issue_token(root, "ann").token)
    assert ann is not None
    asked, _ = services.approvals.submit(
        ann, Submission("ask", acme.definition, "Ask", {}, 1, None)
    )
    services.approvals.command(ann, asked.id, Command("withdraw", "w", {}))
    again = {"reason": "补充材料", "material_version": 2, "form_data": None, "title": None}
    linked = services.approvals.link(ann, asked.id, Command("resubmit", "r", again)).linked
    assert linked is not None

    bundle = saved(
        tmp_path, "linked.json", cronledger(env, "audit", "bundle", asked.id, "--linked")
    )
    checked = cronledger(
        offline(), "audit", "verify-bundle", str(bundle), "--public-key", str(public)
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"linked instance {linked.id} (resubmitted_as):" in checked.stdout
    assert json.loads(bundle.read_text())["linked"][0]["relation"] == "resubmitted_as"
