"""Every PATCH operation's request schema in the document says what the server takes, on both
stores: a field declared nullable accepts null (null removes it; another field may still need
it), a field not declared nullable is refused null with 422 on that field, and an object
merged into the current one (a `...Patch` component, which requires none of its keys) is
accepted with one key alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.e2e.conformance import created
from tests.e2e.test_openapi_shapes import resolved
from tests.support import Api

DOCUMENT = "/api/openapi.json"
MERGE_PATCH = "application/merge-patch+json"
# What refuses a null for what it is, not for another field's sake ("required when the target
# is an approval" refuses a null that is fine with another target).
NULL_REFUSALS = {"Missing data for required field.", "Field may not be null."}
# Set on the definition, so that its objects have values to merge into (a rule in seconds is
# merged as null: docs/api.md#partial-changes-patch).
ESCALATION = {"after_seconds": 600, "account_id": "root"}
WORKING_DAYS = {"kind": "working_days", "days": 2, "calendar": "cn", "cutoff": "18:00"}


def seed(admin: Api, definition: dict[str, Any], body: dict[str, Any]) -> dict[str, str]:
    """One resource of each kind a PATCH changes, as the path parameters naming them."""
    created(admin, "/api/accounts", {"id": "clerk", "name": "clerk", "roles": ["auditor"]})
    schedule = created(admin, "/api/workflows/schedules", body)
    group = created(admin, "/api/groups", {"key": "finance", "name": "财务部"})
    office = {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai", "years": [2026]}
    calendar = created(admin, "/api/calendars", office)
    path = f"/api/definitions/{definition['id']}"
    objects = {"escalation": ESCALATION, "deadline_rule": WORKING_DAYS}
    assert admin.patch(path, objects).status_code == 200
    return {
        "schedule_id": schedule["id"],
        "account_id": "clerk",
        "definition_id": definition["id"],
        "group_id": group["id"],
        "calendar_id": calendar["id"],
    }


def patch_operations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each PATCH path and its request body's schema, resolved."""
    for path, operations in document["paths"].items():
        if "patch" in operations:
            media = operations["patch"]["requestBody"]["content"][MERGE_PATCH]
            yield path, resolved(document, media["schema"])


def nullable(schema: dict[str, Any]) -> bool:
    """Whether a property admits null: `nullable`, or a `oneOf` branch of null alone."""
    return bool(schema.get("nullable")) or any(
        branch.get("enum") == [None] for branch in schema.get("oneOf", [])
    )


def merged_object(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any] | None:
    """The partial object a property is, if it is one: an object requiring none of its keys."""
    branches = [*schema.get("oneOf", []), *schema.get("allOf", []), schema]
    for branch in branches:
        target = resolved(document, branch)
        if (
            target.get("type") == "object"
            and target.get("properties")
            and not target.get("required")
        ):
            return target  # type: ignore[no-any-return]
    return None


def test_every_patch_schema_says_what_the_server_takes(
    admin: Api, definition: dict[str, Any], body: dict[str, Any]
) -> None:
    world = seed(admin, definition, body)
    document = admin.get(DOCUMENT).json
    operations = list(patch_operations(document))
    assert len(operations) == 5  # schedules, accounts, definitions, groups, calendars
    disagreements: list[str] = []
    partials: list[str] = []
    for template, schema in operations:
        path = template.format(**world)
        for name, property_ in schema["properties"].items():
            shape = merged_object(document, property_)
            if shape is not None:  # before null removes the object
                partials.append(name)
                disagreements += _partial_disagrees(admin, path, name, shape)
            disagreements += _null_disagrees(admin, path, name, nullable(property_))
    assert not disagreements, "\n".join(disagreements)
    assert {"trigger", "target", "deadline_rule", "escalation", "reviewers"} <= set(partials)


def _null_disagrees(admin: Api, path: str, name: str, declared: bool) -> list[str]:
    """What the server's answer to `{name: null}` says against the document, if anything."""
    answer = admin.patch(path, {name: None})
    said = answer.json.get("errors", {}).get(name, []) if answer.status_code == 422 else []
    refused = bool(NULL_REFUSALS & set(said))
    if declared and refused:
        return [f"{path} {name}: declared nullable, refused: {answer.json['errors'][name]}"]
    if not declared and not refused:
        return [f"{path} {name}: not nullable, null answered {answer.status_code}"]
    return []


def _partial_disagrees(admin: Api, path: str, name: str, shape: dict[str, Any]) -> list[str]:
    """What the server's answer to one key of the current object alone says against the
    document, if anything (a key other than `kind`, where there is one, with its current
    value)."""
    current = admin.get(path).json[name]
    assert isinstance(current, dict), f"{path} {name} has no object to merge into: {current}"
    keys = [key for key in shape["properties"] if current.get(key) is not None]
    key = sorted(keys, key=lambda k: k == "kind")[0]  # the kind alone only if nothing else
    answer = admin.patch(path, {name: {key: current[key]}})
    if answer.status_code != 200:
        return [f"{path} {name}.{key} alone: {answer.status_code} {answer.json}"]
    return []
