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
if an object reaches it.

Second, for a KfDef of kfctl v1 (its trees were written for v3), where vars are substituted: kustomize
merges each kustomization's default varReference field specs and its configurations' (dropping a spec when
one already there has its path and a kind the newcomer's selects), and v5's defaults have ten v3.2.0's
lacked (every object's annotations among them). A $(VAR) that v3 left as written and v5 would substitute
gets each ``$`` doubled: v5's expansion turns ``$$`` back into ``$``, which gives the string v3 left
(kubeflow/manifests v1.2's stacks/kubernetes: Ambassador annotations with ``$(namespace)``). A string v3
substituted and v5 would not is refused by the caller. Pure work on the text and objects it is given.
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


# Where kustomize substitutes $(VAR) by default: the varReference field specs of kustomize v3.2.0 (the v3 of
# kfctl v1.2 and of kubeflow/manifests v1.2's tests; pkg/transformers/config/defaultconfig/varreference.go) and
# the ten kustomize v5 added (api v0.19.0 internal/konfig/builtinpluginconsts/varreference.go; it removed none).
_POD_SPECS = (
    ("spec/template/spec", ("DaemonSet", "Deployment", "Job", "ReplicaSet", "StatefulSet")),
    ("spec/jobTemplate/spec/template/spec", ("CronJob",)),
    ("spec", ("Pod",)),
)
Spec = tuple[str, str, str, str]  # path, group, version, kind ("" selects any)
V3_VAR_REFERENCES: tuple[Spec, ...] = (
    *(
        (f"{prefix}/{containers}/{field}", "", "", kind)
        for prefix, kinds in _POD_SPECS
        for kind in kinds
        for containers in ("containers", "initContainers")
        for field in ("args", "command", "env/value", "volumeMounts/mountPath")
    ),
    *(("spec/rules/host", "", "", "Ingress"), ("spec/tls/hosts", "", "", "Ingress")),
    *(("spec/tls/secretName", "", "", "Ingress"), ("spec/ports/port", "", "", "Service")),
    *(("spec/ports/targetPort", "", "", "Service"), ("metadata/labels", "", "", "")),
)
V5_VAR_REFERENCES: tuple[Spec, ...] = (
    *V3_VAR_REFERENCES,
    ("metadata/annotations", "", "", ""),
    ("spec/template/metadata/annotations", "", "", "Deployment"),
    ("spec/jobTemplate/spec/template/volumes/nfs/server", "", "", "CronJob"),
    ("spec/nfs/server", "", "", "PersistentVolume"),
    *(("spec/template/spec/volumes/nfs/server", "", "", k) for k in ("DaemonSet", "Deployment", "Job", "ReplicaSet")),
    ("spec/volumeClaimTemplates/spec/nfs/server", "", "", "StatefulSet"),
    ("spec/volumes/nfs/server", "", "", "Pod"),
)
ESCAPE_NOTE = (
    "kfctl generate wrote $$ for $ in these values: kustomize v3 left them as written, kustomize v5 substitutes "
    "vars there, and its expansion turns $$ back into $:"
)


def merged(defaults: tuple[Spec, ...], kustomizations: list[list[Spec]]) -> list[Spec]:
    """The varReference field specs a build applies, as kustomize v3 and v5 both merge them: each
    kustomization, bases before the one that names them, adds the defaults and then its configurations' specs;
    a spec is dropped when one already there has its path and a group, version and kind the newcomer's select
    (so ``metadata/annotations`` for any kind is lost after one for MutatingWebhookConfiguration: kustomize's
    FieldSpec.effectivelyEquals)."""
    out: list[Spec] = []
    for own in kustomizations:
        for spec in (*defaults, *own):
            selects = (e for e in out if e[0] == spec[0])  # same path: dropped if the newcomer's gvk selects it
            if not any(all(not x or x == y for x, y in zip(spec[1:], e[1:], strict=True)) for e in selects):
                out.append(spec)
    return out


@dataclass(frozen=True)
class Escaped:
    line: int  # 1-based, in the file written
    kind: str
    name: str
    field: str  # the field's path, dotted ("metadata.annotations.getambassador.io/config")

    def describe(self) -> str:
        return f"line {self.line}: {self.kind} {self.name} {self.field}"


def var_references(text: str) -> list[Spec]:
    """The varReference field specs of a transformer configuration, in order; [] if none or it does not parse."""
    try:
        doc = yamlio.safe_load(text)
    except yaml.YAMLError:
        return []
    entries = doc.get("varReference") if isinstance(doc, dict) else None
    return [
        (str(e["path"]), str(e.get("group") or ""), str(e.get("version") or ""), str(e.get("kind") or ""))
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and isinstance(e.get("path"), str)
    ]


def escape_v3_literals(
    text: str, v3: list[Spec], v5: list[Spec]
) -> tuple[str, tuple[Escaped, ...], tuple[Escaped, ...]]:
    """``text`` (a file of objects: resources or patches of a build with vars) with ``$`` doubled in each string
    the build's v5 field specs reach and its v3 ones do not, so that v5's expansion gives back the string v3
    left; and the strings with a ``$`` that v3 reached and v5 does not (no rewrite makes v5 substitute there:
    the caller refuses them). Without vars kustomize expands nothing, and a doubled ``$`` would stay."""
    if "$" not in text:
        return text, (), ()
    try:
        docs = yamlio.compose_all(text)
    except yaml.YAMLError:
        return text, (), ()
    only_v5: dict[int, tuple[yaml.ScalarNode, str, str, str]] = {}
    only_v3: dict[int, tuple[yaml.ScalarNode, str, str, str]] = {}
    for doc in docs:
        if isinstance(doc, yaml.MappingNode):
            in_v3, in_v5 = _strings_reached(doc, v3), _strings_reached(doc, v5)
            only_v5.update({i: hit for i, hit in in_v5.items() if i not in in_v3 and "$" in hit[0].value})
            only_v3.update({i: hit for i, hit in in_v3.items() if i not in in_v5 and "$" in hit[0].value})
    refused = tuple(Escaped(n.start_mark.line + 1, *rest) for n, *rest in (only_v3[i] for i in sorted(only_v3)))
    if not only_v5:
        return text, (), refused
    out = text
    for start in sorted(only_v5, reverse=True):
        end = only_v5[start][0].end_mark.index
        out = out[:start] + out[start:end].replace("$", "$$") + out[end:]
    shift = 1 + len(only_v5)
    escaped = tuple(Escaped(n.start_mark.line + 1 + shift, *rest) for n, *rest in (only_v5[i] for i in sorted(only_v5)))
    header = [f"# {ESCAPE_NOTE}\n", *(f"#   {e.describe()}\n" for e in escaped)]
    return "".join(header) + out, escaped, refused


def _strings_reached(doc: yaml.MappingNode, specs: list[Spec]) -> dict[int, tuple[yaml.ScalarNode, str, str, str]]:
    kind, name = _scalar(doc, "kind"), _scalar(_child(doc, "metadata"), "name")
    api = _scalar(doc, "apiVersion")
    group, version = api.rsplit("/", 1) if "/" in api else ("", api)
    found: dict[int, tuple[yaml.ScalarNode, str, str, str]] = {}
    for path, g, v, k in specs:
        if (k and k != kind) or (g and g != group) or (v and v != version):
            continue
        for fields, node in _reached(doc, _segments(path)):
            found.setdefault(node.start_mark.index, (node, kind, name, ".".join(fields)))
    return found


def _segments(path: str) -> list[str]:
    return [s.replace("\\/", "/") for s in _SEGMENT.split(path)]


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key and isinstance(v, yaml.Node):
                return v
    return None


def _scalar(node: yaml.Node | None, key: str) -> str:
    value = _child(node, key)
    return value.value if isinstance(value, yaml.ScalarNode) else ""


def _reached(node: yaml.Node, segments: list[str], fields: tuple[str, ...] = ()) -> list[tuple[list[str], Any]]:
    """The string scalars kustomize's refvar filter visits for a field spec: field by field, every element of
    a list on the way, and at the end the scalar, a list's scalars or a map's scalar values; with the field
    names that lead to each (list positions left out, as field specs leave them)."""
    if isinstance(node, yaml.SequenceNode):
        return [hit for item in node.value for hit in _reached(item, segments, fields)]
    if not segments:
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str":
            return [(list(fields), node)]
        if isinstance(node, yaml.MappingNode):
            return [
                hit
                for k, v in node.value
                if isinstance(k, yaml.ScalarNode) and not isinstance(v, yaml.MappingNode)
                for hit in _reached(v, [], (*fields, k.value))
            ]
        return []
    child = _child(node, segments[0])
    return [] if child is None else _reached(child, segments[1:], (*fields, segments[0]))
