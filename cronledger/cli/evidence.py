"""Evidence a third party can check: `audit public-key`, `checkpoints`, `bundle`,
`verify-bundle` and `consistency` (docs/audit.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cronledger.application.evidence import NoSigningKey
from cronledger.application.services import (
    Services,
)
from cronledger.config import ConfigError
from cronledger.persistence.connections import Limits
from cronledger.persistence.signing_key import (
    SigningKeyError,
    load_signing_key,
    signing_key_path,
)
from cronledger.persistence.store import Store
from cronledger.printable import printable, printable_json
from domain.evidence import (
    HEADLINE,
    BundleReport,
    Checkpoint,
    EvidenceError,
    consistency_problem,
    public_key_from_pem,
    verify_bundle,
)
from domain.merkle import ProofError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cronledger.cli.audit import Zone, audit
from cronledger.cli.base import checked_settings, opened, utc_text

EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@audit.command("public-key")
def public_key() -> None:
    """Print the public key (PEM) that checks this service's checkpoints, for auditors."""
    settings = checked_settings()
    try:
        store = Store.from_url(settings.database_url, Limits.of(settings, "cli"))
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    path = signing_key_path(settings.signing_key_file, store)
    try:
        key = load_signing_key(path)
    except SigningKeyError as error:
        raise click.ClickException(printable(str(error))) from None
    if key is None:
        raise click.ClickException(
            f"no signing key at {printable(str(path))}: `cronledger migrate` makes one (or set "
            "CRONLEDGER_SIGNING_KEY_FILE to the file that holds it)"
        )
    click.echo(key.public_pem(), nl=False)


@audit.command()
@click.option(
    "--since",
    type=click.IntRange(0),
    default=0,
    help="Only the checkpoints of a larger tree size.",
)
@click.option(
    "--latest",
    is_flag=True,
    help="Only the checkpoint of the log as it is now (signed now if the log grew since the "
    "last one).",
)
@click.option(
    "--export",
    is_flag=True,
    help='JSON: {"checkpoints": [...]}; with --latest, the one checkpoint alone, the file to '
    "save and later give to `audit verify-bundle --checkpoint` and `audit consistency`.",
)
@click.option(
    "--append",
    "kept_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Add to FILE (JSON lines, one checkpoint a line; made if missing) the checkpoints "
    "newer than its last line, each checked first: its signature, and that its log extends the "
    "one before. Older lines are never rewritten.",
)
@click.option(
    "--public-key",
    "key_file",
    type=EXISTING_FILE,
    help="With --append: the public key (PEM) to check the signatures with (default: this "
    "service's).",
)
def checkpoints(
    since: int, latest: bool, export: bool, kept_file: Path | None, key_file: Path | None
) -> None:
    """The signed checkpoints of the log's Merkle tree, oldest first: tree size, log position
    of its last event, when and with which key it was signed, root hash."""
    if latest and since:
        raise click.UsageError("--latest takes no --since")
    if kept_file is not None:
        if since or export:
            raise click.UsageError("--append takes no --since and no --export")
        _append_checkpoints(kept_file, key_file, latest)
        return
    if key_file is not None:
        raise click.UsageError("--public-key goes with --append")
    with opened(read_only=True) as services:
        chosen = [_latest_checkpoint(services)] if latest else _checkpoints(services, since)
    if export:
        as_json = [c.as_json() for c in chosen]
        click.echo(printable_json(as_json[0] if latest else {"checkpoints": as_json}, indent=2))
        return
    for checkpoint in chosen:
        click.echo(
            f"tree size {checkpoint.tree_size}  position {checkpoint.position}  "
            f"signed {printable(checkpoint.signed_at)}  key {printable(checkpoint.key_id)}  "
            f"root {checkpoint.root.hex()}"
        )


def _latest_checkpoint(services: Services) -> Checkpoint:
    """The checkpoint of the log as it is now: signed now if the log grew since the last."""
    services.projector.catch_up()
    services.evidence.checkpoint(force=True)
    latest = services.evidence.latest()
    if latest is None:
        raise NoSigningKey()
    return latest


def _append_checkpoints(path: Path, key_file: Path | None, latest: bool) -> None:
    """Append to `path` the checkpoints newer than its last, once all of them are checked."""
    with _evidence_refused():
        last = _last_kept(path)
        given = _public_key(key_file) if key_file else None
    with opened(read_only=True) as services:
        key = given or _own_public_key(services)
        if latest:
            _latest_checkpoint(services)
        newer = _checkpoints(services, last.tree_size if last else 0)
        problem = _chain_problem(services, last, newer, key)
    if problem is not None:
        click.echo(f"NOT appended: {printable(problem)}", err=True)
        sys.exit(1)
    if not newer:
        size = last.tree_size if last else 0
        click.echo(f"{printable(str(path))} is up to date (tree size {size})")
        return
    with path.open("a", encoding="utf-8") as kept:
        kept.writelines(f"{json.dumps(c.as_json(), separators=(',', ':'))}\n" for c in newer)
    click.echo(
        f"appended {len(newer)} checkpoint(s) to {printable(str(path))}: tree sizes "
        f"{newer[0].tree_size} to {newer[-1].tree_size}"
    )


def _last_kept(path: Path) -> Checkpoint | None:
    """The last checkpoint of a file of JSON lines (None: no file, or an empty one)."""
    if not path.exists():
        return None
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as error:
        raise EvidenceError(f"cannot read {path}: {error}") from None
    if not lines:
        return None
    try:
        return Checkpoint.from_json(json.loads(lines[-1]))
    except (ValueError, EvidenceError) as error:
        raise EvidenceError(f"{path}: its last line is not a checkpoint: {error}") from None


def _chain_problem(
    services: Services,
    last: Checkpoint | None,
    newer: list[Checkpoint],
    key: Ed25519PublicKey,
) -> str | None:
    """Why the checkpoints cannot follow `last`: a bad signature, or a log that does not
    extend the one before (each proven by the store's consistency proof)."""
    before = last
    for checkpoint in newer:
        if before is None:
            try:
                checkpoint.check_signature(key)
            except EvidenceError as error:
                return str(error)
        else:
            try:
                proof = services.evidence.proof_between(before.tree_size, checkpoint.tree_size)
            except ProofError as error:
                return str(error)
            problem = consistency_problem(before, checkpoint, proof, key)
            if problem is not None:
                return problem
        before = checkpoint
    return None


def _checkpoints(services: Services, since: int) -> list[Checkpoint]:
    """Every checkpoint above tree size `since`, a page at a time."""
    found: list[Checkpoint] = []
    while page := services.evidence.checkpoints(since):
        found += page
        since = page[-1].tree_size
    return found


class SinceCheckpoint(click.ParamType[int]):
    """A checkpoint saved earlier, as its JSON file or its tree size."""

    name = "checkpoint"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if value.isdigit():
            return int(value)
        try:
            return _saved_checkpoint(Path(value)).tree_size
        except EvidenceError as error:
            self.fail(printable(str(error)), param, ctx)


@audit.command()
@click.argument("key")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option(
    "--since",
    multiple=True,
    type=SinceCheckpoint(),
    help="A checkpoint saved earlier (its JSON file, or its tree size): the bundle holds the "
    "proof that the log only grew since it. Repeatable.",
)
@click.option(
    "--linked",
    is_flag=True,
    help="An approval instance's bundle also holds the bundles of the instances it links to "
    "(resubmission and cancellation).",
)
def bundle(key: str, tenant: str | None, since: tuple[int, ...], linked: bool) -> None:
    """One aggregate's events (a log id, or an account id) with the proofs that a signed
    checkpoint holds them, as JSON: `audit verify-bundle` checks it anywhere, with no store."""
    with opened(read_only=True) as services:
        aggregate = services.audit.resolve(key, tenant)
        document = services.evidence.bundle(aggregate, since=list(since), linked=linked)
    click.echo(printable_json(document, indent=2))


@audit.command("verify-bundle")
@click.argument("bundle_file", metavar="FILE", type=EXISTING_FILE)
@click.option(
    "--public-key",
    "key_file",
    required=True,
    type=EXISTING_FILE,
    help="The service's public key (PEM), as `cronledger audit public-key` prints it.",
)
@click.option(
    "--checkpoint",
    "saved_file",
    type=EXISTING_FILE,
    help="A checkpoint saved earlier (`audit checkpoints --export --latest`): the bundle must "
    'prove the log only grew since. Of a file of several ({"checkpoints": [...]}), the last.',
)
@click.option(
    "--tz",
    "zone",
    type=Zone(),
    help="IANA time zone of the local times (default: this machine's).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def verify_bundle_command(
    bundle_file: Path, key_file: Path, saved_file: Path | None, zone: tzinfo | None, as_json: bool
) -> None:
    """Check an evidence bundle offline, with no store and no settings: the checkpoint's
    signature, each event's proof against it and, given a saved checkpoint, that the log only
    grew since. Exit code 1 when anything fails (or a file cannot be read)."""
    with _evidence_refused():
        saved = _saved_checkpoint(saved_file) if saved_file else None
        report = verify_bundle(_json_file(bundle_file), _public_key(key_file), saved)
    if as_json:
        click.echo(printable_json(_report_json(report, zone), indent=2))
    else:
        for line in _report_lines(report, zone):
            click.echo(line)
    if report.problems:
        sys.exit(1)


def _report_lines(report: BundleReport, zone: tzinfo | None) -> Iterator[str]:
    checkpoint = report.checkpoint
    assert checkpoint is not None
    yield (
        f"checked against the checkpoint of tree size {checkpoint.tree_size}, signed "
        f"{printable(checkpoint.signed_at)} with key {printable(checkpoint.key_id)}"
    )
    for event in report.proven:
        local, utc = _instants(event.at, zone)
        yield (
            f"#{event.position} v{event.version} {printable(event.type)} {local} ({utc}) "
            f"by {printable(event.actor or '-')}"
        )
        yield from (f"    {name}: {_value_text(value)}" for name, value in event.told())
    yield from (f"note: {printable(note)}" for note in report.notes)
    yield from (f"warning: {printable(warning)}" for warning in report.warnings)
    for linked in report.linked:
        yield (
            f"linked instance {printable(linked.aggregate_id)} "
            f"({printable(linked.relation or '-')}):"
        )
        yield from (f"  {line}" for line in _report_lines(linked, zone))
    yield from (f"problem: {printable(problem)}" for problem in report.problems)
    if report.problems:
        count = len(report.problems)
        yield f"NOT verified: {count} problem{'' if count == 1 else 's'}"
    else:
        yield (
            f"verified: {len(report.proven)} events of {printable(report.aggregate_id)} proven "
            f"in the signed log of tree size {checkpoint.tree_size}"
        )


def _report_json(report: BundleReport, zone: tzinfo | None) -> dict[str, Any]:
    assert report.checkpoint is not None
    events = []
    for event in report.proven:
        local, utc = _instants(event.at, zone)
        events.append(
            {
                "position": event.position,
                "version": event.version,
                "type": event.type,
                "at": local,
                "at_utc": utc,
                "actor": event.actor,
                **{name: event.fields.get(name) for name in HEADLINE},
                "fields": event.fields,
            }
        )
    return {
        "verified": not report.problems,
        "aggregate_id": report.aggregate_id,
        "checkpoint": report.checkpoint.as_json(),
        "events": events,
        "notes": report.notes,
        "warnings": report.warnings,
        "problems": report.problems,
        **(
            {"linked": [_linked_json(linked, zone) for linked in report.linked]}
            if report.linked
            else {}
        ),
    }


def _linked_json(report: BundleReport, zone: tzinfo | None) -> dict[str, Any]:
    return {"relation": report.relation, **_report_json(report, zone)}


def _value_text(value: object) -> str:
    """A decoded field as one line: text as it is, anything else as compact JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return printable(text)


def _instants(at: datetime | None, zone: tzinfo | None) -> tuple[str | None, str | None]:
    """An instant in `zone` (None: this machine's) with its offset, and in UTC."""
    if at is None:
        return None, None
    return at.astimezone(zone).isoformat(), utc_text(at)


@audit.command()
@click.argument("old_file", metavar="OLD", type=EXISTING_FILE)
@click.argument("new_file", metavar="NEW", type=EXISTING_FILE)
@click.option(
    "--public-key",
    "key_file",
    type=EXISTING_FILE,
    help="The public key (PEM) the checkpoints were signed with (default: this service's).",
)
def consistency(old_file: Path, new_file: Path, key_file: Path | None) -> None:
    """Check that the log of a checkpoint saved later (NEW) extends the one of a checkpoint
    saved earlier (OLD): nothing OLD signed was rewritten since. Each file holds one checkpoint
    (`audit checkpoints --export --latest`); of a file of several, the last. Exit code 1 when
    it does not."""
    with _evidence_refused():
        old, new = _saved_checkpoint(old_file), _saved_checkpoint(new_file)
        given = _public_key(key_file) if key_file else None
    if old.tree_size > new.tree_size:
        raise click.UsageError(
            f"OLD (tree size {old.tree_size}) is newer than NEW (tree size {new.tree_size}): "
            "give the older checkpoint first"
        )
    with opened(read_only=True) as services:
        key = given or _own_public_key(services)
        try:
            proof = services.evidence.proof_between(old.tree_size, new.tree_size)
        except ProofError as error:
            problem: str | None = str(error)
        else:
            problem = consistency_problem(old, new, proof, key)
    if problem is not None:
        click.echo(f"NOT consistent: {printable(problem)}")
        sys.exit(1)
    click.echo(
        f"consistent: the log of tree size {new.tree_size} extends the one of tree size "
        f"{old.tree_size}"
    )


def _own_public_key(services: Services) -> Ed25519PublicKey:
    if services.evidence.key is None:
        raise NoSigningKey()
    return services.evidence.key.private.public_key()


@contextmanager
def _evidence_refused() -> Iterator[None]:
    """An unreadable file, or evidence that cannot be what it claims: its message, exit 1."""
    try:
        yield
    except EvidenceError as error:
        raise click.ClickException(printable(str(error))) from None


def _json_file(path: Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except OSError as error:
        raise EvidenceError(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise EvidenceError(f"{path} is not JSON: {error}") from None
    except RecursionError:
        raise EvidenceError(f"{path} is nested too deeply to be evidence") from None


def _saved_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint a file holds; of `{"checkpoints": [...]}` or of JSON lines
    (`audit checkpoints --append`), the last."""
    kept = _last_line_kept(path)
    if kept is not None:
        return kept
    data = _json_file(path)
    if isinstance(data, dict) and "checkpoints" in data:
        listed = data["checkpoints"]
        if not isinstance(listed, list) or not listed:
            raise EvidenceError(f"{path} holds no checkpoint")
        data = listed[-1]
    try:
        return Checkpoint.from_json(data)
    except EvidenceError as error:
        raise EvidenceError(f"{path}: {error}") from None


def _last_line_kept(path: Path) -> Checkpoint | None:
    """The last checkpoint of a file of several JSON lines; None if it is not one."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None  # told by the reading that follows
    if len([line for line in lines if line.strip()]) < 2 or not lines[0].lstrip().startswith(b"{"):
        return None
    try:
        json.loads(lines[0])
    except ValueError:
        return None  # one JSON document over several lines
    return _last_kept(path)


def _public_key(path: Path) -> Ed25519PublicKey:
    try:
        return public_key_from_pem(path.read_bytes())
    except OSError as error:
        raise EvidenceError(f"cannot read {path}: {error.strerror}") from None
    except EvidenceError as error:
        raise EvidenceError(f"{path}: {error}") from None
