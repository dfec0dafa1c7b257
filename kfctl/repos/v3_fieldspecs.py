"""Field specs of kustomize v3 transformer configurations that kustomize v5 refuses, left out as v3 ignored them.

A transformer configuration (a file a kustomization names under ``configurations:``) lists field specs, each
a ``path`` (and a kind): ``varReference``, ``commonLabels``, ``namePrefix``, ``fieldSpecs`` of a
``nameReference``... kustomize v3 walked such a path field by field and, at a list, applied the rest of it to
each element (pkg/transformers MutateField): a segment that is a number, as in
``spec/template/spec/containers/0/args/1``, was looked up as a *field name* in each container, found in none,
and the entry changed nothing. kustomize v5 reads a number as a list index, which its field specs refuse at a
mapping ("fieldName: 0: wrong node kind: expected SequenceNode but got MappingNode"), so the whole build
fails. kubeflow/manifests v1.2 has such entries (common/spartakus/base/params.yaml, written as if indices
worked); v3 substituted their vars through its default varReference specs (every container's ``args``,
``command`` and ``env`` ``value`` of a Deployment, StatefulSet, Job...), which v5 has too.

So such an entry is commented out, in place, with a header saying which and why: v5 then builds what v3
built. v3 matched one only in an object with a field named by digits on that path (a ConfigMap's
``data: {"0": …}``), which v5 field specs cannot name at all: :func:`reaches` tells, for the caller to check
the rendered objects and refuse rather than render otherwise than v3. An entry with ``create: true`` is left
as it is: v3 created a field named by the number there, v5 cannot, and kustomize's own error names the entry
if an object reaches it. Pure work on the text and objects it is given.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kfctl import yamlio

NOTE = (
    "kfctl generate left out these field specs: kustomize v3 read a number in a path as a field name, which no "
    "object rendered here has, so they changed nothing; kustomize v5 reads it as a list index and refuses the build:"
)
_SEGMENT = re.compile(r"(?<!\\)/")  # kustomize's path separator; "\/" is a slash inside a field name
_NUMBER = re.compile(r"[0-9]+")
_DASH = re.compile(r"[ \t]*-[ \t]+")  # what precedes a block sequence item on its first line


@dataclass(frozen=True)
class LeftOut:
    field: str  # varReference, nameReference fieldSpecs, commonLabels, ...
    path: str
    kind: str  # "" when the entry names none
    line: int  # 1-based

    def describe(self) -> str:
        kind = f" (kind {self.kind})" if self.kind else ""
        return f"line {self.line}: {self.field} path {self.path}{kind}"


def numbered(path: str) -> bool:
    """Whether a field spec path has a segment that is a number (``containers/0/args``)."""
    return any(_NUMBER.fullmatch(segment) for segment in _SEGMENT.split(path))


def reaches(obj: Mapping[str, Any], entry: LeftOut) -> bool:
    """Whether kustomize v3 would have found a field of ``obj`` on the entry's path: field by field, a list's
    every element for the rest of the path (pkg/transformers MutateField without creating fields)."""
    if entry.kind and obj.get("kind") != entry.kind:
        return False
    return _reaches(obj, [s.replace("\\/", "/") for s in _SEGMENT.split(entry.path)])


def _reaches(node: Any, segments: list[str]) -> bool:
    if not isinstance(node, Mapping) or segments[0] not in node:
        return False
    value = node[segments[0]]
    if len(segments) == 1:
        return True
    if isinstance(value, list):
        return any(_reaches(item, segments[1:]) for item in value)
    return _reaches(value, segments[1:])


def rewrite(text: str) -> tuple[str, tuple[LeftOut, ...]]:
    """``text`` (a transformer configuration) with every numbered field spec that does not create fields
    commented out and a header naming them; ``(text, ())`` unchanged when there is none or it does not parse
    (kustomize reports that in its own words)."""
    try:
        root = yamlio.compose(text)
    except yaml.YAMLError:
        return text, ()
    if not isinstance(root, yaml.MappingNode):
        return text, ()
    found: list[tuple[LeftOut, yaml.Node]] = []
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode):
            for item in _items(value):
                found += _numbered(key.value, item)
                for sub_key, sub_value in item.value:
                    if isinstance(sub_key, yaml.ScalarNode) and sub_key.value == "fieldSpecs":
                        for spec in _items(sub_value):
                            found += _numbered(f"{key.value} fieldSpecs", spec)
    if not found:
        return text, ()
    lines = text.splitlines(keepends=True)
    spans = [_block_lines(text, lines, node) for _, node in found]
    if any(span is None for span in spans):
        return text, ()  # a flow-style list: kustomize's own error names the entry
    for span in spans:
        assert span is not None
        for i in range(span[0], span[1] + 1):
            lines[i] = "# " + lines[i] if lines[i].strip() else lines[i]
    shift = 1 + len(found)  # the header's lines: each entry is named by its line in the file written
    left = tuple(dataclasses.replace(entry, line=entry.line + shift) for entry, _ in found)
    header = [f"# {NOTE}\n", *(f"#   {entry.describe()}\n" for entry in left)]
    return "".join(header + lines), left


def _items(node: yaml.Node) -> list[yaml.MappingNode]:
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [item for item in node.value if isinstance(item, yaml.MappingNode)]


def _numbered(field: str, spec: yaml.MappingNode) -> list[tuple[LeftOut, yaml.Node]]:
    values = {k.value: v for k, v in spec.value if isinstance(k, yaml.ScalarNode)}
    path, kind, create = values.get("path"), values.get("kind"), values.get("create")
    if not isinstance(path, yaml.ScalarNode) or not numbered(path.value):
        return []
    if isinstance(create, yaml.ScalarNode) and create.value.lower() == "true":
        return []
    shown_kind = kind.value if isinstance(kind, yaml.ScalarNode) else ""
    return [(LeftOut(field, path.value, shown_kind, spec.start_mark.line + 1), spec)]


def _block_lines(text: str, lines: list[str], node: yaml.Node) -> tuple[int, int] | None:
    """The first and last line (0-based) of a block sequence item that has its lines to itself; None for
    anything else (a flow-style item shares its line with others)."""
    if getattr(node, "flow_style", False):
        return None
    first = node.start_mark.line
    if not _DASH.fullmatch(lines[first][: node.start_mark.column]):
        return None
    last = text[: node.end_mark.index].rstrip().count("\n")
    return first, last
