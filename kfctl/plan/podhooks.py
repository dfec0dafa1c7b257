"""Workloads whose pods an admission webhook with failurePolicy=Fail admits.

The API server calls such a webhook for every pod a workload's controller creates, and refuses the pod while
the webhook's backend does not answer. The planner therefore treats a workload's pod template like an object
of the bundle (its namespace's labels, the template's labels) and draws one of two edges:

- the workload waits for the backend (rule ``pod-webhook``), so its pods are created, and mutated, as soon as
  they can be; or, when that would be a cycle because the backend needs the workload (its own serving
  Deployment; or a workload of an application the webhook's application ``dependsOn`` that serves no API),
- the webhook configuration waits for the workload to be Available (rule ``admits-its-needs``).

Upstream katib is the case in point: its pod mutator selects the ``kubeflow`` namespace, where katib's own
controller and the training operator it depends on run. Registered first, it refuses the very pods that
would serve it, for ever. (`kubectl apply` of a kustomize build escapes by accident: kustomize lists webhook
configurations last.) The training operator's pods wait for katib's backend: katib's ``dependsOn`` waits only
for the operator's CRDs, so that is no cycle. A pod that must be recreated later still needs the backend;
that is the webhook author's choice, and `kfctl status` shows it.

matchConditions (CEL) are not evaluated offline: a webhook is taken to admit what its rules and selectors
match, which can only add order, never remove it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kfctl.objects import Obj, ObjectKey, meta_of
from kfctl.plan import rules

if TYPE_CHECKING:
    from kfctl.plan.graph import Plan


def pod_template(key: ObjectKey, obj: Obj) -> Obj | None:
    """The pod a workload's controller would create, as admission sees it (kind, namespace, labels); None
    for what is not a pod-template owner. A bare Pod is an object of the bundle and is matched as such."""
    path = rules.POD_SPEC_PATHS.get((key.group, key.kind))
    if not path or len(path) < 2:
        return None
    template: Any = obj
    for part in path[:-1]:
        template = template.get(part) if isinstance(template, Mapping) else None
    if not isinstance(template, Mapping):
        return None
    labels = meta_of(template).get("labels") or {}
    metadata: dict[str, Any] = {"name": key.name, "labels": dict(labels)}
    if key.namespace:
        metadata["namespace"] = key.namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}


class Reachability:
    """What each of some steps (the webhook backends) waits for, directly or through others, kept up to date
    while edges are drawn. Asking the graph afresh for every workload a webhook admits was quadratic: a
    backend of an application that ``dependsOn`` a large one reaches all of that one's objects."""

    def __init__(self, plan: Plan, roots: Iterable[str]) -> None:
        self.plan = plan
        self.reached: dict[str, set[str]] = {}
        for root in roots:
            seen: set[str] = set()
            self._walk(root, seen)
            self.reached[root] = seen

    def reaches(self, src: str, dst: str) -> bool:
        """Does step ``src`` (one of the roots) wait, directly or through others, for step ``dst``?"""
        return dst in self.reached[src]

    def drawn(self, src: str, dst: str) -> None:
        """The edge ``src`` waits for ``dst`` was just drawn: what reaches ``src`` now reaches ``dst`` and
        everything it waits for. Edges are never removed, so sets only grow."""
        for root, seen in self.reached.items():
            if (src == root or src in seen) and dst not in seen:
                seen.add(dst)
                self._walk(dst, seen)

    def _walk(self, start: str, seen: set[str]) -> None:
        todo = [start]
        while todo:
            for edge in self.plan.deps.get(todo.pop(), []):
                if edge.dependency not in seen:
                    seen.add(edge.dependency)
                    todo.append(edge.dependency)
