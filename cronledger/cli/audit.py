"""Reading the log as an auditor: `audit timeline`, `state`, `replay` and `verify`
(docs/audit.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any

import click

from cronledger.application.audit import Authentication, Verification
from cronledger.persistence.ledger import jsonable
from cronledger.printable import printable, printable_json
from domain.triggers import TriggerError, load_zone
from projections.maintenance import STOPPED

if TYPE_CHECKING:
    pass
from cronledger.cli.base import main, opened, parsed_instant, progress_bar, timeline_line

WHERE_OF_SIDE = {
    "live": "only in the live table",
    "replay": "only in the replay",
    STOPPED: "the replay stopped on an event it cannot apply",
}


@main.group()
def audit() -> None:
    """Read the log as an auditor."""


class Zone(click.ParamType[tzinfo]):
    """An IANA time zone name, e.g. Asia/Shanghai."""

    name = "zone"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tzinfo:
        if isinstance(value, tzinfo):
            return value
        try:
            return load_zone(value)
        except TriggerError as error:
            self.fail(error.message, param, ctx)


def zone_option(command: Callable[..., None]) -> Callable[..., None]:
    """`--tz ZONE`: instants printed in that zone, with its offset, instead of UTC."""
    return click.option(
        "--tz",
        "zone",
        type=Zone(),
        default=UTC,
        help="IANA time zone to print instants in (default UTC).",
    )(command)


@audit.command()
@click.argument("key")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@zone_option
def timeline(key: str, tenant: str | None, as_json: bool, zone: tzinfo) -> None:
    """Every event of one aggregate (a log id, or an account id), oldest first."""
    with opened(read_only=True) as services:
        entries = services.audit.timeline(key, tenant, zone)
    if as_json:
        json.dump({"items": [jsonable(asdict(e), zone) for e in entries]}, sys.stdout, indent=2)
        click.echo()
        return
    for entry in entries:
        click.echo(timeline_line(entry, zone))


@audit.command()
@click.argument("key")
@click.option("--at", "at_text", required=True, help="An instant with its offset (ISO 8601).")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@zone_option
def state(key: str, at_text: str, tenant: str | None, as_json: bool, zone: tzinfo) -> None:
    """An aggregate as it was at a past instant."""
    at = parsed_instant(at_text)
    with opened(read_only=True) as services:
        found = services.audit.state(key, at, tenant, zone)
    if as_json:
        click.echo(printable_json(found, indent=2))
        return
    last = found["last_event"]
    click.echo(
        f"{printable(found['type'])} {found['id']} log_version {found['log_version']} "
        f"as of {found['as_of']} "
        f"(last event #{last['position']} {printable(last['type'])})"
    )
    for field, value in found["state"].items():
        click.echo(f"  {printable(field)} = {printable_json(value)}")


@audit.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def replay(as_json: bool) -> None:
    """Rebuild every projection from the log and compare it with the live tables."""
    with opened(read_only=True) as services, progress_bar(services, "replay") as advance:
        differences = services.audit.replay(advance)
    if as_json:
        rows = [
            {"table": d.table, "side": d.side, "row": jsonable(list(d.row))} for d in differences
        ]
        click.echo(printable_json({"differences": rows}, indent=2))
    else:
        for d in differences:
            click.echo(f"{d.table}: {WHERE_OF_SIDE[d.side]}: {jsonable(list(d.row))}")
        click.echo("no difference" if not differences else f"{len(differences)} differences")
    if differences:
        sys.exit(1)


@audit.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def verify(as_json: bool) -> None:
    """Recompute the hash chain and the Merkle tree over the log and check each event's MAC;
    name the first position that no longer matches, and warn of events out of time order."""
    with opened(read_only=True) as services, progress_bar(services, "verify") as advance:
        verification = services.audit.verify(advance)
    found, head, tree = verification.found, verification.head, verification.tree
    if as_json:
        broken = {"position": found.position, "problem": found.problem} if found else None
        checked = {
            "events": head.events,
            "position": head.position,
            "head": head.hash,
            "tree_size": tree.size,
            "tree_root": tree.root.hex(),
        }
        vouched = dict.fromkeys(checked) if found else checked  # a broken log vouches for none
        checkpoints = {
            "proven": verification.proven,
            "unproven": [c.as_json() for c in verification.unproven],
        }
        document = {
            "intact": found is None,
            "break": broken,
            **vouched,
            **checkpoints,
            "authentication": _authentication_json(verification.authentication),
            "skew_warnings": [
                {"position": s.position, "previous_position": s.previous, "seconds": s.seconds}
                for s in verification.skews
            ],
        }
        click.echo(json.dumps(document))
    else:
        _verification_text(verification)
    if found is not None:
        sys.exit(1)


def _authentication_json(found: Authentication) -> dict[str, Any]:
    legacy = found.unauthenticated
    return {
        "authenticated_from": found.authenticated_from,
        "authenticated": found.authenticated,
        "key_ids": list(found.key_ids),
        "unauthenticated": {"from": legacy[0], "to": legacy[1]} if legacy else None,
    }


def _verification_text(verification: Verification) -> None:
    found, head, tree = verification.found, verification.head, verification.tree
    if found is None:
        click.echo(
            f"the log matches its hash chain and its Merkle tree: {head.events} events checked, "
            f"up to position {head.position}; chain head {head.hash}; tree of {tree.size} "
            f"events, root {tree.root.hex()}; {verification.proven} signed checkpoints proven"
        )
    else:
        click.echo(
            f"the log no longer matches at position {found.position}: {printable(found.problem)}"
        )
        for checkpoint in verification.unproven:
            click.echo(
                f"signed checkpoint of tree size {checkpoint.tree_size} (signed "
                f"{printable(checkpoint.signed_at)}) is not the tree the log gives now"
            )
    click.echo(_authentication_text(verification.authentication))
    for skew in verification.skews:
        click.echo(
            f"warning: the event at position {skew.position} was recorded {skew.seconds:g} s "
            f"before the event logged before it (position {skew.previous}): a clock that "
            "stepped back, or an event written out of turn"
        )


def _authentication_text(found: Authentication) -> str:
    legacy = found.unauthenticated
    before = (
        f"; positions {legacy[0]} to {legacy[1]} were written before, unauthenticated "
        "(the hash chain and any checkpoint signed over them still cover them)"
        if legacy
        else ""
    )
    if found.authenticated_from is None:
        return f"this store does not authenticate its events (`cronledger migrate` starts){before}"
    keys = ", ".join(found.key_ids) or "none"
    return (
        f"events authenticated from position {found.authenticated_from}: "
        f"{found.authenticated} checked (key ids {keys}){before}"
    )
