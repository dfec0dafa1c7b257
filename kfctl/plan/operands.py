"""Which CRDs an operator's workload needs served before it can start, read from the RBAC the bundle grants it.

An operator built on controller-runtime (most of Kubeflow's) sets up an informer per kind it reconciles; when
one of those kinds is not served yet its manager exits ("no matches for kind …") and the kubelet restarts it
with a back-off that doubles: 10 s, 20 s, 40 s. Applied in the same wave as its CRDs, an operator lost that
back-off whenever the API server was slow to establish them — KServe's controller restarted three times in a
measured install, and its readiness was the run's critical path. So a workload waits for the CRDs its own
application ships whose kinds its ServiceAccount may list or watch: the RBAC is how the bundle says which
kinds a workload reconciles, where a blanket "every workload waits for every CRD" would also hold back a
database behind an unrelated CRD.

Only the workload's own application's CRDs are considered: another application's API is what ``dependsOn`` (or
the webhook and pod edges) orders, and a kind an operator can merely read elsewhere rarely stops it starting.
Bindings are read from the bundle alone (offline, like the rest of the planner); aggregated ClusterRoles and
bindings made elsewhere are not seen, which can only leave an edge out, never add a wrong one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kfctl.objects import ObjectKey

RBAC = "rbac.authorization.k8s.io"
READ_VERBS = frozenset({"list", "watch", "*"})


class Grants:
    """ServiceAccount (namespace, name) → the (group, resource) pairs it may list or watch, from the bundle's
    Roles, ClusterRoles and their bindings. ``*`` stands for any group or resource, as in RBAC."""

    def __init__(self, objects: Mapping[ObjectKey, Mapping[str, Any]]) -> None:
        self.by_account: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for key, obj in objects.items():
            if key.group != RBAC or key.kind not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            ref = obj.get("roleRef") or {}
            role_ns = key.namespace if ref.get("kind") == "Role" else ""
            role = objects.get(ObjectKey(RBAC, str(ref.get("kind")), role_ns, str(ref.get("name"))))
            if role is None:
                continue
            readable = set(_readable(role.get("rules") or []))
            if not readable:
                continue
            for subject in obj.get("subjects") or []:
                if subject.get("kind") != "ServiceAccount":
                    continue
                account = (str(subject.get("namespace") or key.namespace), str(subject.get("name")))
                self.by_account.setdefault(account, set()).update(readable)

    def reads(self, namespace: str, account: str, group: str, plural: str) -> bool:
        """May ``namespace/account`` list or watch ``plural.group``?"""
        pairs = self.by_account.get((namespace, account), set())
        return any(g in (group, "*") and r in (plural, "*") for g, r in pairs)


def _readable(rules: Iterable[Mapping[str, Any]]) -> Iterable[tuple[str, str]]:
    for rule in rules:
        if not READ_VERBS & set(rule.get("verbs") or []):
            continue
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                yield str(group), str(resource).split("/", 1)[0]


def service_account(pod: Mapping[str, Any]) -> str:
    """The ServiceAccount a pod runs as: ``default`` unless it names one (``serviceAccount`` is the old field)."""
    return str(pod.get("serviceAccountName") or pod.get("serviceAccount") or "default")
