"""The plan as a picture: Graphviz dot, or Mermaid for a Markdown page (GitHub draws it).

Two graphs: the applications (each with its object count; a solid arrow for ``dependsOn``, a dashed one for
waits of one application's objects on another's that ``dependsOn`` does not cover), or every step with its
waiting edges, grouped by application. Arrows point from what is applied first to what waits for it, so
the picture reads top to bottom in apply order. This module draws text; it never prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kfctl.plan.graph import Plan
from kfctl.plan.summary import PlanSummary, application_order, is_wait


@dataclass(frozen=True)
class Node:
    id: str  # the application or step id
    label: str  # lines joined by "\n"
    group: str = ""  # the application the node is drawn inside; "" for none
    virtual: bool = False  # a gate kfctl waits on (backend, application, external check), not an object


@dataclass(frozen=True)
class Arrow:
    first: str
    then: str  # waits for ``first``
    label: str = ""
    dashed: bool = False


@dataclass(frozen=True)
class Diagram:
    nodes: tuple[Node, ...]
    arrows: tuple[Arrow, ...]


def application_diagram(summary: PlanSummary) -> Diagram:
    nodes = tuple(
        Node(a.name, f"{a.name}\n{'external' if a.external else _count(a.objects, 'object')}", virtual=a.external)
        for a in summary.applications
    )
    arrows: list[Arrow] = []
    for a in summary.applications:
        arrows += [Arrow(dep, a.name) for dep in a.depends_on]
        arrows += [
            Arrow(other, a.name, _count(n, "wait"), dashed=True) for other, n in a.waits if other not in a.depends_on
        ]
    return Diagram(nodes, tuple(arrows))


def object_diagram(plan: Plan) -> Diagram:
    apps = {name: i for i, name in enumerate(application_order(plan))}
    steps = sorted(plan.steps.values(), key=lambda s: (apps.get(s.app, len(apps)), s.id))
    nodes = tuple(Node(s.id, s.id, s.app, virtual=s.kind != "object") for s in steps)
    arrows = tuple(
        Arrow(e.dependency, s.id, e.rule.name)
        for s in steps
        for e in sorted(plan.deps.get(s.id, []), key=lambda e: e.dependency)
        if is_wait(e)
    )
    return Diagram(nodes, arrows)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _groups(diagram: Diagram) -> dict[str, list[Node]]:
    """Nodes by group, groups in the order they first appear; "" (no group) included."""
    out: dict[str, list[Node]] = {}
    for node in diagram.nodes:
        out.setdefault(node.group, []).append(node)
    return out


# --- Graphviz ----------------------------------------------------------------------------------------------
def to_dot(diagram: Diagram) -> str:
    lines = ["digraph plan {", "  rankdir=TB;", '  node [shape=box, fontname="Helvetica"];']
    for group, nodes in _groups(diagram).items():
        indent = "  "
        if group:
            lines += [f"  subgraph {_dot_quote('cluster_' + group)} {{", f"    label={_dot_quote(group)};"]
            indent = "    "
        for node in nodes:
            shape = ", shape=ellipse" if node.virtual else ""
            lines.append(f"{indent}{_dot_quote(node.id)} [label={_dot_quote(node.label)}{shape}];")
        if group:
            lines.append("  }")
    for a in diagram.arrows:
        attrs = [f"label={_dot_quote(a.label)}"] if a.label else []
        attrs += ["style=dashed"] if a.dashed else []
        tail = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"  {_dot_quote(a.first)} -> {_dot_quote(a.then)}{tail};")
    lines.append("}")
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --- Mermaid -----------------------------------------------------------------------------------------------
# Words Mermaid's flowchart grammar reads as keywords when they stand as a node id.
_MERMAID_KEYWORDS = frozenset(
    {"end", "graph", "flowchart", "subgraph", "style", "class", "classdef", "click", "linkstyle", "direction"}
)


def to_mermaid(diagram: Diagram) -> str:
    groups = [f"group {g}" for g in _groups(diagram) if g]
    if all(re.fullmatch(r"[\w.-]+", n.id, flags=re.ASCII) for n in diagram.nodes):  # applications: keep names
        ids = _mermaid_ids([*(n.id for n in diagram.nodes), *groups])
    else:  # step ids are long (kind, group, namespace, name): number them, so big graphs stay small
        ids = {n.id: f"n{i}" for i, n in enumerate(diagram.nodes, start=1)}
        ids |= {g: f"g{i}" for i, g in enumerate(groups, start=1)}
    lines = ["flowchart TD"]
    for group, nodes in _groups(diagram).items():
        indent = "    "
        if group:
            lines.append(f"    subgraph {ids[f'group {group}']}[{_mermaid_text(group)}]")
            indent = "        "
        for node in nodes:
            label = _mermaid_text(node.label)
            lines.append(f"{indent}{ids[node.id]}([{label}])" if node.virtual else f"{indent}{ids[node.id]}[{label}]")
        if group:
            lines.append("    end")
    for a in diagram.arrows:
        arrow = "-.->" if a.dashed else "-->"
        label = f"|{_mermaid_text(a.label)}|" if a.label else ""
        lines.append(f"    {ids[a.first]} {arrow}{label} {ids[a.then]}")
    return "\n".join(lines)


def _mermaid_ids(names: Iterable[str]) -> dict[str, str]:
    """A Mermaid id for each name: its letters, digits and underscores, unique, never a keyword."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = re.sub(r"\W", "_", name, flags=re.ASCII).strip("_") or "node"
        if base.lower() in _MERMAID_KEYWORDS or base[0].isdigit():
            base = f"n_{base}"
        candidate, n = base, 1
        while candidate in used:
            n += 1
            candidate = f"{base}_{n}"
        used.add(candidate)
        out[name] = candidate
    return out


def _mermaid_text(text: str) -> str:
    """A quoted label: Mermaid's entity for a double quote, <br/> between lines."""
    return '"' + text.replace('"', "#quot;").replace("\n", "<br/>") + '"'
