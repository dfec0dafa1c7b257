"""Where a kustomization names its remote bases, and the same file with those entries pointing at local copies.

The rewrite touches only the scalar of each replaced ``resources``/``bases``/``components`` entry (found by
its position in the parsed YAML, so comments, quoting and every other byte stay as upstream wrote them) and
adds a header comment that says what each entry was. Pure text work on the string it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from kfctl import yamlio
from kfctl.repos.remote import REFERENCE_FIELDS, looks_remote


@dataclass(frozen=True)
class Entry:
    field: str  # resources | bases | components
    value: str
    line: int  # 1-based
    start: int  # character offsets of the scalar (quotes included) in the text
    end: int


def remote_entries(text: str) -> list[Entry]:
    """The entries of ``text`` (a kustomization) that kustomize would fetch, in file order; [] when it does not
    parse (kustomize reports that in its own words)."""
    try:
        root = yamlio.compose(text)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    found: list[Entry] = []
    for key, value in root.value:
        if not isinstance(key, yaml.ScalarNode) or key.value not in REFERENCE_FIELDS:
            continue
        if not isinstance(value, yaml.SequenceNode):
            continue
        for item in value.value:
            if isinstance(item, yaml.ScalarNode) and looks_remote(item.value) and "\n" not in item.value:
                found.append(
                    Entry(key.value, item.value, item.start_mark.line + 1, item.start_mark.index, item.end_mark.index)
                )
    return found


def rewrite(text: str, replacements: Mapping[str, str], *, note: str) -> str:
    """``text`` with each remote entry in ``replacements`` (value -> local path) replaced, and a header comment
    (``note`` first, then per replaced entry its field and URL, and the local path)."""
    entries = [e for e in remote_entries(text) if e.value in replacements]
    if not entries:
        return text
    out = text
    for entry in sorted(entries, key=lambda e: e.start, reverse=True):
        out = out[: entry.start] + replacements[entry.value] + out[entry.end :]
    header = [f"# {note}"]
    for entry in entries:
        header.append(f"#   {entry.field}: {entry.value}")
        header.append(f"#     -> {replacements[entry.value]}")
    return "\n".join(header) + "\n" + out
