"""The docs: the reference pages are what docs/gen_reference.py generates from the code (and a changed option
makes them stale), the README keeps the shape a newcomer reads in five minutes, its links resolve, and the docs
site's first page shows the same commands as the README's quick start (which e2e/test_readme_quickstart.py runs).
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import gen_reference
import pytest

from kfctl import yamlio
from kfctl.config import loader, schema

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
INDEX = REPO / "docs" / "index.md"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
README_SECTIONS = [
    "Install",
    "Quick start on your own cluster",
    "Quick start with no cluster",
    "The full upstream platform",
    "Upgrades",
    "GitOps",
    "Air-gapped",
    "Uninstall",
    "Documentation",
]


def test_the_reference_pages_are_what_the_code_generates() -> None:
    assert gen_reference.stale() == [], "run `python docs/gen_reference.py` and commit docs/reference/"


def test_a_changed_option_makes_the_command_reference_stale(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kfctl.cli.init_cmd import init

    platform = next(p for p in init.params if isinstance(p, click.Option) and p.name == "platform")
    monkeypatch.setattr(platform, "help", "Cluster kind, said otherwise.")
    assert gen_reference.stale() == ["reference/commands.md"]
    assert gen_reference.main(["--check"]) == 1
    assert capsys.readouterr().err == ("stale: docs/reference/commands.md; run `python docs/gen_reference.py`\n")


def test_a_field_the_loader_accepts_without_a_description_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loader, "APP_KEYS", (*loader.APP_KEYS, "colour"))
    monkeypatch.setattr(loader, "REPO_KEYS", tuple(k for k in loader.REPO_KEYS if k != "ref"))
    with pytest.raises(SystemExit) as e:
        gen_reference.kfdef_page()
    assert str(e.value) == (
        "kfctl/config/schema.py does not match the loader's keys: undocumented: spec.applications[].colour; "
        "not accepted by the loader: spec.repos[].ref"
    )


@pytest.mark.parametrize("field", schema.FIELDS, ids=[f.path for f in schema.FIELDS])
def test_each_fields_example_sets_that_field(field: schema.FieldDoc) -> None:
    example = yamlio.safe_load(field.example)
    assert isinstance(example, dict)
    assert list(example) == [field.path.rsplit(".", 1)[-1].removesuffix("[]")]


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short_and_in_the_issues_order() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert re.findall(r"^## (.+)$", text, flags=re.M) == README_SECTIONS


def test_the_front_door_commands_stay_in_a_table_of_short_cells() -> None:
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (.+) \| `(.+)` \|$", _section(text, "Quick start with no cluster"), flags=re.M)
    assert [cmd for _, cmd in rows] == ["make demo", "make test"]
    assert max(len(what) for what, _ in rows) <= 80
    assert (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().endswith("exec make test")


def test_the_docs_first_page_shows_the_readmes_commands() -> None:
    readme, index = README.read_text(encoding="utf-8"), INDEX.read_text(encoding="utf-8")
    for title in ("Install", "Quick start on your own cluster", "Uninstall"):
        assert SHELL_BLOCK.findall(_section(index, title)) == SHELL_BLOCK.findall(_section(readme, title)), title


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens."""
    fenced = re.sub(r"^```.*?^```$", "", markdown, flags=re.M | re.S)
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#{1,6} (.+)$", fenced, flags=re.M)
    }


def test_the_readmes_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    broken = []
    for link in links:
        target, _, anchor = link.partition("#")
        path = README.parent / target if target else README
        if not path.exists() or (anchor and anchor not in _anchors(path.read_text(encoding="utf-8"))):
            broken.append(link)
    assert broken == []
