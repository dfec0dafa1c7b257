"""YAML in, safely, fast and within limits.

Loading uses libyaml's C safe loader when PyYAML was built with it (about ten times faster on the catalog and
on rendered bundles of hundreds of objects), else the pure-Python safe loader. Both construct only plain
YAML types; no loader that can build arbitrary Python objects is ever used. Dumping stays with the
pure-Python safe dumper so that generated files are byte-identical on every machine.

A safe loader is not a bounded one: nine levels of ten aliases (the "billion laughs") is a 1 KiB file
that expands to 10⁹ nodes, a file of 100 000 ``[`` overflows the C composer's stack, and a KfDef that
repeats a key silently loses one of its values. So every file kfctl reads for itself — the KfDef, catalog
metadata, the lock file, the kustomization files of a foreign repo — is held to the limits below before
any node is built: at most ``MAX_BYTES`` of UTF-8, ``MAX_DEPTH`` levels of nesting and ``MAX_NODES`` nodes
once aliases are expanded, and no key twice in one mapping. The limits are far above what a real file
needs (the largest KfDef or metadata file has under 200 nodes, 7 levels, 4 KiB) and hold a hostile one to
about 100 MiB at the peak of the KfDef loader. Rendered kustomize output is large and trusted more, so it
only gets the alias bound, and only when the text holds an anchor at all (a substring search on the hot
path); its depth is bounded by kustomize's go-yaml, which refuses nesting past 10 000 levels (libyaml's
composer runs out of stack between 20 000 and 25 000).

Violations raise :class:`InputError`, a ``yaml.MarkedYAMLError`` whose mark is the line and column where
the limit was crossed; :func:`describe` words any YAML error as ``file:line:column: problem``. This module
reads files but raises no kfctl errors: each reader wraps them in its own.
"""

from __future__ import annotations

import collections.abc
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

MAX_BYTES = 4 * 1024 * 1024  # of a KfDef, metadata, lock or kustomization file: the largest real one is 4 KiB
MAX_DEPTH = 100  # nested mappings and lists; real files need 7; the Python composer recurses ~3 frames a level
MAX_NODES = 100_000  # scalars, mappings and lists, aliases expanded: ~100 MiB peak, 30 MiB kept, as located values

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
# An anchor is "&" + name at the start of a node: after a space, a line break or a flow indicator. Searched
# as the literal "&name" (fast) and the character before is checked by hand.
_ANCHOR = re.compile(r"&[0-9A-Za-z_-]")
_ANCHOR_BEFORE = frozenset(" \t\r\n[{,\x85\u2028\u2029")


class InputError(yaml.MarkedYAMLError):
    """YAML kfctl refuses before building it: over a limit, not UTF-8, or a key stated twice.

    ``problem`` is the sentence for a person; ``problem_mark`` is where (0-based line and column)."""

    def __init__(self, problem: str, mark: Any) -> None:  # a yaml.Mark, from the Python or the C parser
        super().__init__(problem=problem, problem_mark=mark)


def describe(e: yaml.YAMLError, source: str) -> str:
    """``source:line:column: problem`` for any YAML error (``invalid YAML: …`` unless it is a refusal)."""
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = e.problem or e.context
        return f"{where}: {problem}" if isinstance(e, InputError) else f"{where}: invalid YAML: {problem}"
    return f"{source}: invalid YAML: {e}"


def read_text(path: Path, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of ``path``, reading at most ``max_bytes + 1`` bytes of it.

    OSError as open() raises it; InputError when the file is larger or not UTF-8."""
    with path.open("rb") as f:
        raw = f.read(max_bytes + 1)
    return decode(raw, name=str(path), max_bytes=max_bytes)


def decode(raw: bytes, *, name: str, max_bytes: int = MAX_BYTES) -> str:
    if len(raw) > max_bytes:
        limit = f"{max_bytes // (1024 * 1024)} MiB" if max_bytes >= 1024 * 1024 else f"{max_bytes} bytes"
        raise InputError(
            f"the file is larger than {limit}, the most kfctl reads of a YAML file (the limit falls here)",
            _mark(raw, max_bytes),
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}", _mark(raw, e.start)) from e


def _mark(raw: bytes, offset: int) -> yaml.Mark:
    line_start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[line_start:offset].decode("utf-8", errors="replace"))
    return yaml.Mark("<file>", offset, raw.count(b"\n", 0, offset), column, None, 0)


def check_limits(
    text: str, *, loader: type[yaml.SafeLoader] = _LOADER, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """Refuse ``text`` (InputError) if a document nests deeper than ``max_depth`` or has more than
    ``max_nodes`` nodes with aliases expanded, or if an alias refers to a node that contains it.

    Walks the event stream, which is flat and costs no memory for the document, so a refused file is never
    built. Syntax errors raise as ``loader`` raises them, but for a character YAML does not allow (a NUL of a
    corrupt file), which gets its line and column too (PyYAML says only "position 11 of <unicode string>")."""
    try:
        _scan(text, loader, max_depth=max_depth, max_nodes=max_nodes, aliases_only=False)
    except yaml.reader.ReaderError as e:
        raise _located(e, text, offset_in_bytes=loader is not yaml.SafeLoader) from e


def _located(e: yaml.reader.ReaderError, text: str, *, offset_in_bytes: bool) -> yaml.MarkedYAMLError:
    """A reader error as a syntax error at its line and column. libyaml counts its offset in UTF-8 bytes, the
    Python reader in characters."""
    offset = len(text.encode("utf-8")[: e.position].decode("utf-8", errors="ignore")) if offset_in_bytes else e.position
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    character = e.character if isinstance(e.character, int) else ord(e.character)
    return yaml.MarkedYAMLError(
        problem=f"character #x{character:04x}, which YAML does not allow: is it a text file?",
        problem_mark=yaml.Mark("<file>", offset, line, column, None, 0),
    )


def load_lenient(text: str) -> Any:
    """One document of a file another tool defines, read as that tool reads it (a kubeconfig): within the
    limits above (a syntax error located as they locate it), a key stated twice keeping its last value."""
    check_limits(text)
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def _scan(
    text: str, loader: type[yaml.SafeLoader], *, max_depth: int | None, max_nodes: int, aliases_only: bool
) -> None:
    nodes = 0  # so far, aliases expanded (with aliases_only: only the nodes that aliases add)
    open_: list[tuple[str | None, list[int]]] = []  # per open collection: anchor, [expanded size, height]
    open_anchors: set[str] = set()  # an alias to one of these would make the document infinite
    done: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, height) of its finished node
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.DocumentStartEvent):
            done = {}  # anchors are per document
            continue
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if max_depth is not None and len(open_) >= max_depth:
                raise InputError(f"nested more than {max_depth} levels deep", event.start_mark)
            nodes += 0 if aliases_only else 1
            if nodes > max_nodes:
                raise InputError(f"more than {max_nodes} nodes", event.start_mark)
            open_.append((event.anchor, [1, 1]))
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            continue
        anchor: str | None = None
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, (size, height) = open_.pop()
            if anchor is not None:
                open_anchors.discard(anchor)
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size, height = event.anchor, 1, 0
            nodes += 0 if aliases_only else 1
            if nodes > max_nodes:
                raise InputError(f"more than {max_nodes} nodes", event.start_mark)
        elif isinstance(event, yaml.AliasEvent):
            name = str(event.anchor)
            if name in open_anchors:
                raise InputError(f"the alias *{name} refers to a node that contains it", event.start_mark)
            size, height = done.get(name, (1, 0))  # an undefined alias: the composer reports it
            if max_depth is not None and len(open_) + height > max_depth:
                raise InputError(
                    f"the alias *{name} nests the document more than {max_depth} levels deep", event.start_mark
                )
            nodes += size
            if nodes > max_nodes:
                raise InputError(
                    f"the alias *{name} expands the document past {max_nodes} nodes (aliases of aliases: a YAML bomb?)",
                    event.start_mark,
                )
        else:
            continue
        if anchor is not None:
            done[anchor] = (size, height)
        if open_:
            parent = open_[-1][1]
            parent[0] += size
            parent[1] = max(parent[1], height + 1)


def merged_pairs(
    node: yaml.MappingNode, memo: dict[int, list[tuple[yaml.Node, yaml.Node, bool]]]
) -> list[tuple[yaml.Node, yaml.Node, bool]]:
    """The (key, value, own) pairs of ``node`` after YAML merge keys (``<<``), in PyYAML's order: merged ones
    first, the mapping's own ones last, a later pair overriding an earlier one with the same key.

    Unlike PyYAML's ``flatten_mapping`` it leaves the node as it is, so a node met twice through an alias is
    judged the same both times; ``memo`` (by node id) keeps chains of merges linear."""
    cached = memo.get(id(node))
    if cached is not None:
        return cached
    merged: list[tuple[yaml.Node, yaml.Node, bool]] = []
    own: list[tuple[yaml.Node, yaml.Node, bool]] = []
    for key_node, value_node in node.value:
        if key_node.tag == _VALUE_TAG:  # a plain "=" key, as PyYAML's flatten_mapping treats it
            key_node.tag = "tag:yaml.org,2002:str"
        if key_node.tag != _MERGE_TAG:
            own.append((key_node, value_node, True))
        elif isinstance(value_node, yaml.MappingNode):
            merged.extend((k, v, False) for k, v, _ in merged_pairs(value_node, memo))
        elif isinstance(value_node, yaml.SequenceNode):
            for source in reversed(value_node.value):  # the first mapping listed wins
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping for merging, but found {source.id}",
                        source.start_mark,
                    )
                merged.extend((k, v, False) for k, v, _ in merged_pairs(source, memo))
        else:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"expected a mapping or list of mappings for merging, but found {value_node.id}",
                value_node.start_mark,
            )
    pairs = merged + own
    memo[id(node)] = pairs
    return pairs


def repeated_key(key: Any, first: yaml.Node, again: yaml.Node) -> str:
    return f"key {key!r} appears twice, on lines {first.start_mark.line + 1} and {again.start_mark.line + 1}"


if TYPE_CHECKING:
    _Base = yaml.SafeLoader
else:
    _Base = _LOADER


class _ConfigLoader(_Base):
    """The safe loader, refusing a mapping that states a key twice (PyYAML keeps the last silently)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._pairs_memo: dict[int, list[tuple[yaml.Node, yaml.Node, bool]]] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)
        mapping: dict[Any, Any] = {}
        own_keys: dict[Any, yaml.Node] = {}
        for key_node, value_node, own in merged_pairs(node, self._pairs_memo):
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, collections.abc.Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
                )
            if own:
                first = own_keys.setdefault(key, key_node)
                if first is not key_node:
                    raise InputError(repeated_key(key, first, key_node), key_node.start_mark)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def safe_load(text: str) -> Any:
    """One document of a file kfctl reads for itself, within the limits above; a repeated key is refused."""
    check_limits(text)
    return yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 - a safe loader


def load_kustomization(text: str) -> Any:
    """A kustomization file as kustomize accepts it: within the same limits, but a key stated twice is not
    refused — kustomize builds kubeflow/manifests v1.2's jupyter-web-app/base_v3, which states commonLabels
    twice. The last statement is kept; were a reference field repeated and kustomize to read the other one, the
    vendored copy would lack its files and the build would fail naming them (never read outside the repo)."""
    check_limits(text)
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def safe_load_all(text: str) -> list[Any]:
    """Every document of rendered output. Aliases may add at most ``MAX_NODES`` nodes to it; that is checked
    (one more pass over the events, ~40% of a load) only when the text defines an anchor at all."""
    if may_alias(text):
        _scan(text, _LOADER, max_depth=None, max_nodes=MAX_NODES, aliases_only=True)
    return list(yaml.load_all(text, Loader=_LOADER))


def may_alias(text: str) -> bool:
    """Whether ``text`` may define an anchor: without one, no alias resolves."""
    if "&" not in text:
        return False
    return any(m.start() == 0 or text[m.start() - 1] in _ANCHOR_BEFORE for m in _ANCHOR.finditer(text))


def compose_all(text: str) -> list[yaml.Node]:
    """The node tree of every document of ``text``, with positions (see :func:`compose`)."""
    check_limits(text)
    return list(yaml.compose_all(text, Loader=_LOADER))


def compose(text: str) -> yaml.Node | None:
    """The node tree of one document, with each node's position in ``text`` (for editing a file in place);
    within the same limits as the other loads. Nodes are not constructed, so an alias costs nothing."""
    check_limits(text)
    return yaml.compose(text, Loader=_LOADER)
