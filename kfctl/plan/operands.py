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

The same RBAC says who makes a custom resource Ready: the workload whose ServiceAccount may update its kind's
``status`` subresource (cert-manager's controller for a Certificate or an Issuer). That is no edge — the
resource can be created before its writer runs — but the writer's chain is the resource's chain:
:mod:`kfctl.plan.priority` ranks it so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kfctl.objects import ObjectKey

RBAC = "rbac.authorization.k8s.io"
READ_VERBS = frozenset({"list", "watch", "*"})
GET_VERBS = READ_VERBS | {"get"}
WRITE_VERBS = frozenset({"update", "patch", "*"})


class Grants:
    """ServiceAccount (namespace, name) → the (group, resource) pairs it may list or watch, and those whose
    ``status`` it may write, from the bundle's Roles, ClusterRoles and their bindings. ``*`` stands for any
    group or resource, as in RBAC, when reading; a status writer must name the resource (a ``*`` grant is an
    administrator's, not a sign of whose status it is)."""

    def __init__(self, objects: Mapping[ObjectKey, Mapping[str, Any]]) -> None:
        self.by_account: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.gettable_by_account: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.status_by_account: dict[tuple[str, str], set[tuple[str, str]]] = {}
        roles = role_index(objects)
        for key, obj in objects.items():
            if key.group != RBAC or key.kind not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            role_key = roles.get(bound_role(key, obj.get("roleRef") or {}))
            role = objects.get(role_key) if role_key else None
            if role is None:
                continue
            rules = role.get("rules") or []
            readable, status = set(_readable(rules)), set(_status_writable(rules))
            gettable = set(_readable(rules, GET_VERBS))
            if not gettable and not status:
                continue
            for subject in obj.get("subjects") or []:
                if subject.get("kind") != "ServiceAccount":
                    continue
                account = (str(subject.get("namespace") or key.namespace), str(subject.get("name")))
                self.by_account.setdefault(account, set()).update(readable)
                self.gettable_by_account.setdefault(account, set()).update(gettable)
                self.status_by_account.setdefault(account, set()).update(status)

    def reads(self, namespace: str, account: str, group: str, plural: str) -> bool:
        """May ``namespace/account`` list or watch ``plural.group``?"""
        pairs = self.by_account.get((namespace, account), set())
        return any(g in (group, "*") and r in (plural, "*") for g, r in pairs)

    def gets(self, namespace: str, account: str, group: str, plural: str) -> bool:
        """May ``namespace/account`` get (or list, or watch) ``plural.group``?"""
        pairs = self.gettable_by_account.get((namespace, account), set())
        return any(g in (group, "*") and r in (plural, "*") for g, r in pairs)

    def status_kinds(self, namespace: str, account: str) -> set[tuple[str, str]]:
        """The (group, plural) pairs whose ``status`` ``namespace/account`` may update or patch."""
        return self.status_by_account.get((namespace, account), set())


def bound_role(binding: ObjectKey, ref: Mapping[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) of the role a binding's ``roleRef`` names: a Role in the binding's namespace, or a
    ClusterRole (no namespace)."""
    kind = str(ref.get("kind"))
    return kind, binding.namespace if kind == "Role" else "", str(ref.get("name"))


def role_index(keys: Iterable[ObjectKey]) -> dict[tuple[str, str, str], ObjectKey]:
    """(kind, namespace, name) → the bundle's key of each Role and ClusterRole. A ClusterRole is indexed without
    the namespace some charts give it (upstream's Spark operator renders ``namespace: kubeflow`` on its
    ClusterRoles; the API server ignores it), so that a binding's ``roleRef`` finds it all the same."""
    out: dict[tuple[str, str, str], ObjectKey] = {}
    for key in keys:
        if key.group == RBAC and key.kind in ("Role", "ClusterRole"):
            out[(key.kind, key.namespace if key.kind == "Role" else "", key.name)] = key
    return out


def _readable(rules: Iterable[Mapping[str, Any]], verbs: frozenset[str] = READ_VERBS) -> Iterable[tuple[str, str]]:
    for rule in rules:
        if not verbs & set(rule.get("verbs") or []):
            continue
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                yield str(group), str(resource).split("/", 1)[0]


def _status_writable(rules: Iterable[Mapping[str, Any]]) -> Iterable[tuple[str, str]]:
    for rule in rules:
        if not WRITE_VERBS & set(rule.get("verbs") or []):
            continue
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                plural, _, sub = str(resource).partition("/")
                if sub == "status" and plural != "*" and group != "*":
                    yield str(group), plural


def service_account(pod: Mapping[str, Any]) -> str:
    """The ServiceAccount a pod runs as: ``default`` unless it names one (``serviceAccount`` is the old field)."""
    return str(pod.get("serviceAccountName") or pod.get("serviceAccount") or "default")
