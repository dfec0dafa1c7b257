"""YAML to plain Python values, remembering where each value came from.

The loader needs file:line:column for every field it complains about, which ``yaml.safe_load`` forgets.
We compose the node graph with the safe loader (no tags beyond YAML's core schema are constructed) and
convert it ourselves, recording the position of every mapping key and value by its field path. The text
is held to kfctl/yamlio.py's limits first, so an alias bomb or a deeply nested file is refused unbuilt,
and a key stated twice is a problem that names both lines, not a value silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from kfctl import yamlio

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class Located:
    """A document as plain values, with the position of every path (keys and list items)."""

    value: Any
    positions: dict[Path, Position] = field(default_factory=dict)
    problems: list[tuple[Path, str]] = field(default_factory=list)
    # The source text of unquoted scalars that YAML read as something other than a string (1.10, 010,
    # yes, 1e3): a string-typed field wants what the user wrote, not float(1.10) printed back as "1.1".
    plain_text: dict[Path, str] = field(default_factory=dict)

    def at(self, path: Path) -> Position:
        """The position of ``path``, or of its nearest ancestor that has one."""
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, Position(1, 1))


def _pos(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def load_located(text: str) -> list[Located]:
    """Parse every document of ``text``. Raises yaml.YAMLError on syntax errors and yamlio.InputError on a
    document past yamlio's limits (depth, nodes with aliases expanded), before building anything."""
    try:
        yamlio.check_limits(text)  # with libyaml when there: five times faster than the parser below
    except yamlio.InputError:
        raise
    except yaml.YAMLError:  # a syntax error: judge again with the parser below, which words it as users see it
        yamlio.check_limits(text, loader=yaml.SafeLoader)
    loader = yaml.SafeLoader(text)
    docs: list[Located] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                continue
            doc = Located(value=None)
            doc.value = _Converter(doc, loader).convert(node, ())
            docs.append(doc)
    finally:
        loader.dispose()
    return docs


class _Converter:
    def __init__(self, doc: Located, loader: yaml.SafeLoader) -> None:
        self.doc = doc
        self.loader = loader
        self.pairs: dict[int, list[tuple[yaml.Node, yaml.Node, bool]]] = {}  # merged pairs by mapping node id

    def convert(self, node: yaml.Node, path: Path) -> Any:
        doc = self.doc
        doc.positions.setdefault(path, _pos(node))
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            own_keys: dict[str, yaml.Node] = {}
            # Merge keys (<<) first, the mapping's own keys last; an own key overrides a merged one, as in YAML.
            for key_node, value_node, own in yamlio.merged_pairs(node, self.pairs):
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    doc.problems.append((path, f"mapping key {key!r} must be a string"))
                    key = str(key)
                child = (*path, key)
                first = own_keys.get(key) if own else None
                if first is not None:
                    doc.positions[child] = _pos(key_node)
                    doc.problems.append((child, yamlio.repeated_key(key, first, key_node)))
                    continue
                if own:
                    own_keys[key] = key_node
                doc.positions[child] = _pos(key_node)
                out[key] = self.convert(value_node, child)
                # Keep the key's position (more useful than the value's) for messages about the field.
                doc.positions[child] = _pos(key_node)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        value = self.loader.construct_object(node, deep=True)
        if (
            isinstance(node, yaml.ScalarNode)
            and node.style is None
            and value is not None
            and not isinstance(value, str)
        ):
            doc.plain_text[path] = node.value
        return value


def format_path(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(document)"
