"""Dependency order for every graph kfctl walks — catalog components, applications, plan steps — with one
rule for cycles.

Built on the standard library's :class:`graphlib.TopologicalSorter`, so ordering is linear in nodes plus
edges (the hand-written walks this replaces re-sorted a node's edges on every visit: quadratic on an
application step with thousands of members). Callers turn :class:`DependencyCycle` into their own
KfctlError, with words for each edge; this module knows nothing of steps, applications or components.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from graphlib import CycleError, TopologicalSorter


class DependencyCycle(Exception):
    """``nodes`` is the cycle in "waits for" order, closed (the first node again at the end) and rotated to
    start at its smallest node, so the same cycle is always named the same way."""

    def __init__(self, nodes: list[str]) -> None:
        super().__init__(" → ".join(nodes))
        self.nodes = nodes


def layers(deps: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Nodes grouped by depth: layer n holds the nodes whose longest chain of dependencies is n long (each
    layer sorted). ``deps`` maps a node to what it waits for; a node named only as a dependency is a node
    too. Raises DependencyCycle."""
    sorter = _prepared(deps)
    out: list[list[str]] = []
    # All of one layer is marked done before the next is asked for, so a node becomes ready exactly one
    # layer after its deepest dependency: the layers are the depths.
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        out.append(ready)
        sorter.done(*ready)
    return out


def order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Every node after everything it waits for: the layers, one after the other. Raises DependencyCycle."""
    return [node for layer in layers(deps) for node in layer]


def check_acyclic(deps: Mapping[str, Iterable[str]]) -> None:
    """Raise DependencyCycle if ``deps`` has a cycle; for callers that keep an order of their own."""
    _prepared(deps)


def _prepared(deps: Mapping[str, Iterable[str]]) -> TopologicalSorter[str]:
    # Sorted insertion: graphlib reports the first cycle it meets, so the same graph names the same cycle.
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for node in sorted(deps):
        sorter.add(node, *sorted(deps[node]))
    try:
        sorter.prepare()
    except CycleError as e:
        raise DependencyCycle(_waits_for_order(e.args[1])) from None
    return sorter


def _waits_for_order(found: list[str]) -> list[str]:
    """graphlib lists a cycle with each node a *predecessor* (dependency) of the next; kfctl names it the
    other way round (each node waits for the next), from its smallest node."""
    ring = list(reversed(found[:-1]))
    start = ring.index(min(ring))
    ring = ring[start:] + ring[:start]
    return [*ring, ring[0]]
