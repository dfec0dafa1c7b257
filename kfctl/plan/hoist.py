"""Which objects application ``dependsOn`` must not hold back: shared prerequisites needed elsewhere.

Upstream trees put what several applications share wherever they like: kubeflow/manifests v1.11.0 ships
the ``kubeflow`` Namespace in katib's tree, while the training operator (which katib depends on) runs in
it. Gating every katib object on the training operator would be a cycle that users cannot fix. So an
object that another application structurally needs (an edge whose rule is ``shared``: its Namespace,
CRD, ServiceAccount, PriorityClass …) is *hoisted*: it keeps only its own structural dependencies and is
applied as soon as those are ready. ``dependsOn`` still orders the applications' workloads and custom
resources, so a cycle between two workloads remains an error.

This module only decides; it draws no edges and never looks at the cluster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kfctl.plan.rules import EdgeRule


@dataclass(frozen=True)
class Hoist:
    """Why a step is applied ahead of its application's ``dependsOn``: the first step that needs it."""

    needed_by: str  # step id
    needed_by_app: str
    rule: EdgeRule
    others: int  # how many more steps of other applications need it


@dataclass(frozen=True)
class Need:
    """One structural edge: ``step`` (of application ``app``) needs ``dependency`` by ``rule``."""

    step: str
    app: str
    dependency: str
    rule: EdgeRule


def hoisted_steps(
    needs: Sequence[Need],
    *,
    owner: Mapping[str, str],
    held: Mapping[str, frozenset[str]],
) -> dict[str, Hoist]:
    """Steps to exempt from their application's ``dependsOn``, each with the reason.

    ``owner`` maps every object step to its application; ``held`` maps each application that has
    ``dependsOn`` to every application it (transitively) waits for. A step is hoisted when its
    application is held and a step of another application needs it through a shared rule, or when a
    hoisted step needs it (a hoisted ServiceAccount's Namespace must come along). Among several needers
    the reason names one of an application its owner waits for (the edge that would have closed a
    cycle), then the first by id.
    """
    by_dependency: dict[str, list[Need]] = {}
    for need in needs:
        if need.rule.shared and need.dependency in owner:
            by_dependency.setdefault(need.dependency, []).append(need)
    out: dict[str, Hoist] = {}
    for dep, found in sorted(by_dependency.items()):
        app = owner[dep]
        if app not in held:
            continue
        outside = [n for n in found if n.app != app]
        if outside:
            first = min(outside, key=lambda n: (n.app not in held[app], n.step))
            out[dep] = Hoist(first.step, first.app, first.rule, len({n.step for n in outside}) - 1)
    by_step: dict[str, list[Need]] = {}
    for need in needs:
        if need.rule.shared:
            by_step.setdefault(need.step, []).append(need)
    queue = deque(sorted(out))
    while queue:
        sid = queue.popleft()
        for need in sorted(by_step.get(sid, []), key=lambda n: n.dependency):
            dep = need.dependency
            if dep in out or dep not in owner or owner[dep] not in held:
                continue
            out[dep] = Hoist(sid, need.app, need.rule, 0)
            queue.append(dep)
    return out
