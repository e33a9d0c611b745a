"""The reference in docs/ cannot drift from the code, nor point outside the repository."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path

from cronledger.config import Settings
from web.problems import STATUS_OF_CODE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
CODE_ROW = re.compile(r"^\| `([A-Z_]+)` \| (\d{3}) \|", re.MULTILINE)
SETTING_ROW = re.compile(r"^\| `(CRONLEDGER_[A-Z_]+)` \| `([^`]*)` \|", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def section(page: Path, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    text = page.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    following = re.search(rf"^#{{1,{len(level)}}} ", text[start + len(heading) + 2 :], re.M)
    return text[start : start + len(heading) + 2 + (following.start() if following else len(text))]


def test_the_error_codes_in_the_api_page_are_the_services() -> None:
    documented = CODE_ROW.findall(section(DOCS / "api.md", "## Errors"))
    assert {code: int(status) for code, status in documented} == STATUS_OF_CODE
    assert len(documented) == len(STATUS_OF_CODE), "a code is listed twice"


def test_every_setting_is_documented_with_its_default() -> None:
    documented = dict(
        SETTING_ROW.findall(section(DOCS / "configuration.md", "## Environment variables"))
    )
    expected = {
        f"CRONLEDGER_{field.name.upper()}": _shown(getattr(Settings(), field.name))
        for field in fields(Settings)
    }
    assert documented == expected


def _shown(default: object) -> str:
    """A default as the page writes it: `1`, not `1.0`; `false`, as its variable is set."""
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def test_the_newest_release_in_the_changelog_is_the_projects_version() -> None:
    releases = RELEASE.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert releases, "no release heading like ## [0.2.0] - 2026-11-30"
    assert releases[0][0] == project["version"]
    assert [date for _, date in releases] == sorted((date for _, date in releases), reverse=True)


def test_every_link_in_the_docs_stays_inside_the_repository() -> None:
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith("#"):
                continue
            assert "://" not in target, f"{page.name} links outside the repository: {target}"
            path = (page.parent / target.split("#", 1)[0]).resolve()
            assert path.is_relative_to(ROOT), f"{page.name} points outside the repository: {target}"
            assert path.exists(), f"{page.name} links to a missing file: {target}"
