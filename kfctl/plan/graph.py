"""Build the apply plan: steps (objects plus virtual gates) and the edges between them.

Three kinds of virtual steps exist besides objects: a *webhook backend* (ready when the Service a webhook
calls has a ready endpoint, its CA is in place and its Deployment is Available), an *application* (what
``dependsOn`` points at: ready when the API the application serves is — its CRDs Established, its
APIServices Available — or, when it serves none, when all its steps are) and an *external* application's
check (ready when the cluster serves its CRDs and the webhooks guarding them answer; nothing is applied).
The planner works offline, from the rendered objects alone; it never talks to the cluster.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kfctl import ordering
from kfctl.errors import PlanError
from kfctl.health.registry import needs_wait
from kfctl.health.waitrules import SHIPPED, WaitRules
from kfctl.objects import Obj, ObjectKey, key_of, meta_of
from kfctl.plan import rules
from kfctl.plan.duplicates import Copy
from kfctl.plan.hoist import Hoist, Need, hoisted_steps
from kfctl.plan.operands import RBAC, Grants, bound_role, role_index, service_account
from kfctl.plan.podhooks import Reachability, pod_template
from kfctl.plan.rules import EdgeRule
from kfctl.plan.selectors import matches
from kfctl.plan.statusless import statusless_kinds

StepKind = Literal["object", "webhook-backend", "application", "external"]


@dataclass(frozen=True)
class ExternalCheck:
    """An application the cluster already provides (``external: true``): what must be there for the rest."""

    application: str
    crds: tuple[str, ...]  # <plural>.<group>, from the catalog component's metadata; () for others


@dataclass(frozen=True)
class WebhookBackend:
    """What a webhook calls: a Service (namespace/name) or a URL, and what makes it ready."""

    service: ObjectKey | None
    url: str
    configs: tuple[tuple[ObjectKey, str], ...]  # (webhook configuration, webhook name) pointing here
    deployment: ObjectKey | None
    certificate: ObjectKey | None

    @property
    def label(self) -> str:
        return f"{self.service.namespace}/{self.service.name}" if self.service else self.url


@dataclass(frozen=True)
class _Planned:
    id: str
    app: str  # the application it belongs to (an object's: the one that renders it first)


@dataclass(frozen=True)
class PlannedObject(_Planned):
    """An object of the bundle: applied, then waited on when its kind has a health rule (``wait``)."""

    key: ObjectKey
    obj: Obj
    wait: bool = True
    kind: ClassVar[StepKind] = "object"


@dataclass(frozen=True)
class PlannedBackend(_Planned):
    """What a webhook calls: nothing to apply, waited on until the API server can call it."""

    backend: WebhookBackend
    wait: ClassVar[bool] = True
    kind: ClassVar[StepKind] = "webhook-backend"


@dataclass(frozen=True)
class PlannedExternal(_Planned):
    """An application the cluster provides (``external: true``): nothing to apply, waited on until it is there."""

    external: ExternalCheck
    wait: ClassVar[bool] = True
    kind: ClassVar[StepKind] = "external"


@dataclass(frozen=True)
class PlannedGate(_Planned):
    """The point where an application a ``dependsOn`` names is ready: nothing to apply or read."""

    wait: ClassVar[bool] = True
    kind: ClassVar[StepKind] = "application"


# A step of the plan. Code dispatches on its type (isinstance, match); ``kind`` is only its name in
# `kfctl plan -o json`.
Step = PlannedObject | PlannedBackend | PlannedExternal | PlannedGate


def object_key(step: Step) -> ObjectKey | None:
    """The object a step applies, None for kfctl's own gates."""
    return step.key if isinstance(step, PlannedObject) else None


@dataclass(frozen=True)
class Edge:
    dependency: str  # step id
    rule: EdgeRule


@dataclass
class Application:
    name: str
    depends_on: tuple[str, ...] = ()


@dataclass
class Plan:
    steps: dict[str, Step] = field(default_factory=dict)
    deps: dict[str, list[Edge]] = field(default_factory=dict)
    applications: list[Application] = field(default_factory=list)
    # Shared prerequisites applied ahead of their application's dependsOn (see kfctl.plan.hoist).
    hoisted: dict[str, Hoist] = field(default_factory=dict)
    # Step id → later applications that render an identical copy of it (applied once, by this step).
    copies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Object steps kfctl makes itself rather than reads from a render (the Secrets it generates, kfctl.secrets):
    # why the plan counts more objects than `generate` rendered.
    generated: frozenset[str] = frozenset()
    # Of those, the ones that take the place of a rendered Secret (upstream's shared credentials,
    # kfctl.secrets.upstream): counted among what `generate` rendered.
    replaced: frozenset[str] = frozenset()
    # Workload step id → the custom resources whose status its ServiceAccount writes (they become Ready when it
    # runs): no edge, only a weight for kfctl.plan.priority (see kfctl.plan.operands).
    drives: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # How each custom kind's health is judged: kfctl's wait rules with the KfDef's spec.waitRules over them.
    wait_rules: WaitRules = SHIPPED

    def objects(self) -> list[PlannedObject]:
        return [s for s in self.steps.values() if isinstance(s, PlannedObject)]

    def applications_of(self, sid: str) -> tuple[str, ...]:
        """Every application that renders the step's object: its own first, then those whose copy was merged."""
        return (self.steps[sid].app, *self.copies.get(sid, ()))

    def sizes(self) -> Counter[str]:
        """Application → objects it renders, a shared one counted under each (their sum counts it more than once)."""
        return Counter(app for s in self.objects() for app in self.applications_of(s.id))

    def dependents(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {sid: [] for sid in self.steps}
        for sid, edges in self.deps.items():
            for e in edges:
                out[e.dependency].append(sid)
        return out

    def waves(self) -> list[list[str]]:
        """Steps grouped by depth: wave n depends only on waves < n (what `kfctl plan` prints). PlanError
        printing the cycle if there is one."""
        try:
            return ordering.layers(self.dependency_graph())
        except ordering.DependencyCycle as e:
            raise _cycle_error(self, e.nodes) from None

    def dependency_graph(self) -> dict[str, list[str]]:
        """Step id → the step ids it waits for (every step a key), for :mod:`kfctl.ordering`."""
        graph: dict[str, list[str]] = {sid: [] for sid in self.steps}
        for sid, edges in self.deps.items():
            graph[sid] = [e.dependency for e in edges]
        return graph


def object_id(key: ObjectKey) -> str:
    return str(key)


def backend_id(label: str) -> str:
    return f"webhook backend {label}"


def application_id(name: str) -> str:
    return f"application {name}"


def external_id(name: str) -> str:
    return f"external application {name}"


def build_plan(
    objects_by_app: Sequence[tuple[str, Sequence[Obj]]],
    *,
    depends_on: Mapping[str, Sequence[str]],
    externals: Sequence[ExternalCheck] = (),
    copies: Sequence[Copy] = (),
    generated: Iterable[ObjectKey] = (),
    replaced: Iterable[ObjectKey] = (),
    wait_rules: WaitRules = SHIPPED,
) -> Plan:
    """The plan for applying every application's objects; ``depends_on`` maps application → applications.
    ``externals`` are applications the cluster provides: one check step each, which dependents wait for.
    ``copies`` are identical copies already merged away (:mod:`kfctl.plan.duplicates`), shown in the plan.

    Raises PlanError on a dependency cycle, printing it.
    """
    plan = Plan(
        generated=frozenset(object_id(k) for k in generated),
        replaced=frozenset(object_id(k) for k in replaced),
        wait_rules=wait_rules,
    )
    by_key: dict[ObjectKey, PlannedObject] = {}
    for check in externals:
        plan.applications.append(Application(check.application, ()))
        step: Step = PlannedExternal(external_id(check.application), check.application, check)
        plan.steps[step.id] = step
        plan.deps[step.id] = []
    statusless = statusless_kinds(obj for _, objs in objects_by_app for obj in objs)
    for app, objs in objects_by_app:
        plan.applications.append(Application(app, tuple(d for d in depends_on.get(app, ()) if d != app)))
        for obj in objs:
            key = key_of(obj)
            wait = needs_wait(key.group, key.kind, wait_rules) and (key.group, key.kind) not in statusless
            planned = PlannedObject(object_id(key), app, key, obj, wait)
            plan.steps[planned.id] = planned
            plan.deps[planned.id] = []
            by_key[key] = planned
    for c in copies:
        sid = object_id(c.key)
        plan.copies[sid] = (*plan.copies.get(sid, ()), c.dropped_from)
    _Builder(plan, by_key).build()
    try:
        ordering.check_acyclic(plan.dependency_graph())
    except ordering.DependencyCycle as e:
        raise _cycle_error(plan, e.nodes) from None
    return plan


class _Builder:
    def __init__(self, plan: Plan, by_key: dict[ObjectKey, PlannedObject]) -> None:
        self.plan = plan
        self.by_key = by_key
        self.crds: dict[tuple[str, str], PlannedObject] = {}  # (group, kind) -> CRD step
        self.plurals: dict[tuple[str, str], str] = dict(rules.BUILTIN_PLURALS)
        self.roles = role_index(by_key)
        # (step, dependency) pairs drawn: one edge per pair, found in constant time (an application step has
        # an edge to each of its thousands of members).
        self.drawn: set[tuple[str, str]] = {(sid, e.dependency) for sid, edges in plan.deps.items() for e in edges}
        # failurePolicy=Fail webhooks: (webhook, its backend's step, its configuration's step).
        self.matchers: list[tuple[Mapping[str, Any], PlannedBackend, PlannedObject]] = []
        # CRD name (<plural>.<group>) → the external application's check that vouches for it.
        self.external_crds: dict[str, PlannedExternal] = {
            crd: step for step in plan.steps.values() if isinstance(step, PlannedExternal) for crd in step.external.crds
        }
        for step in by_key.values():
            if step.key.kind == "CustomResourceDefinition":
                spec = step.obj.get("spec") or {}
                names = spec.get("names") or {}
                gk = (str(spec.get("group", "")), str(names.get("kind", "")))
                self.crds[gk] = step
                self.plurals[gk] = str(names.get("plural") or rules.guess_plural(gk[1]))

    def edge(self, src: Step, dst: Step | None, rule: EdgeRule) -> None:
        if dst is None or dst.id == src.id or (src.id, dst.id) in self.drawn:
            return
        self.drawn.add((src.id, dst.id))
        self.plan.deps.setdefault(src.id, []).append(Edge(dst.id, rule))

    def build(self) -> None:
        steps = list(self.by_key.values())
        for step in steps:
            self._structural(step, step.key, step.obj)
        self._webhooks(steps)
        self._operators(steps)
        self._account_bindings(steps)
        self._certificate_mounts(steps)
        self._status_writers(steps)
        self._applications(steps)
        self._admitted_pods(steps)

    def _structural(self, step: PlannedObject, key: ObjectKey, obj: Obj) -> None:
        crd = self.crds.get((key.group, key.kind))
        self.edge(step, crd, rules.CRD)
        if crd is None and key.group and self.external_crds:
            plural = self.plurals.get((key.group, key.kind)) or rules.guess_plural(key.kind)
            self.edge(step, self.external_crds.get(f"{plural}.{key.group}"), rules.EXTERNAL_CRD)
        if key.namespace:
            self.edge(step, self.by_key.get(ObjectKey("", "Namespace", "", key.namespace)), rules.NAMESPACE)
        spec = obj.get("spec") or {}
        if key.kind in ("RoleBinding", "ClusterRoleBinding") and key.group == RBAC:
            role = self.roles.get(bound_role(key, obj.get("roleRef") or {}))
            self.edge(step, self.by_key.get(role) if role else None, rules.ROLE_REF)
        pod = pod_spec(key, obj)
        if pod is not None:
            for kind, name in sorted(_pod_references(pod)):
                self.edge(step, self.by_key.get(ObjectKey("", kind, key.namespace, name)), rules.POD_REF)
            if pod.get("priorityClassName"):
                pc = ObjectKey("scheduling.k8s.io", "PriorityClass", "", str(pod["priorityClassName"]))
                self.edge(step, self.by_key.get(pc), rules.PRIORITY_CLASS)
        if (key.group, key.kind) == ("cert-manager.io", "Certificate"):
            ref = spec.get("issuerRef") or {}
            if (ref.get("group") or "cert-manager.io") == "cert-manager.io":
                kind = str(ref.get("kind") or "Issuer")
                issuer = ObjectKey(
                    "cert-manager.io", kind, key.namespace if kind == "Issuer" else "", str(ref.get("name"))
                )
                self.edge(step, self.by_key.get(issuer), rules.ISSUER)
        if (key.group, key.kind) == ("", "PersistentVolumeClaim") and spec.get("storageClassName"):
            sc = ObjectKey("storage.k8s.io", "StorageClass", "", str(spec["storageClassName"]))
            self.edge(step, self.by_key.get(sc), rules.STORAGE_CLASS)
        annotations = meta_of(obj).get("annotations") or {}
        hints = annotations.get(rules.HINT_ANNOTATION)
        if hints:
            for ref in str(hints).split(","):
                self.edge(step, self._hint_target(ref.strip(), step), rules.HINT)
        standard = annotations.get(rules.STANDARD_DEPENDS_ON_ANNOTATION)
        if standard:
            for ref in str(standard).split(","):
                self.edge(step, self._standard_target(ref.strip(), step), rules.DEPENDS_ON_STANDARD)

    def _hint_target(self, ref: str, step: PlannedObject) -> PlannedObject:
        """``Kind[.group]/namespace/name`` (empty namespace for cluster-scoped objects)."""
        parts = ref.split("/")
        if len(parts) != 3:
            raise PlanError(
                f"{step.id}: annotation {rules.HINT_ANNOTATION}: {ref!r} is not Kind[.group]/namespace/name"
            )
        kind, _, group = parts[0].partition(".")
        target = self.by_key.get(ObjectKey(group, kind, parts[1], parts[2]))
        if target is None:
            raise PlanError(f"{step.id}: annotation {rules.HINT_ANNOTATION}: {ref} is not in the bundle")
        return target

    def _standard_target(self, ref: str, step: PlannedObject) -> PlannedObject:
        """``<group>/namespaces/<namespace>/<kind>/<name>``, or ``<group>/<kind>/<name>`` when cluster-scoped (as
        cli-utils reads config.kubernetes.io/depends-on; the core group is empty)."""
        parts = ref.split("/")
        name = rules.STANDARD_DEPENDS_ON_ANNOTATION
        if len(parts) == 3:
            group, kind, namespace, obj_name = parts[0], parts[1], "", parts[2]
        elif len(parts) == 5 and parts[1] == "namespaces":
            group, namespace, kind, obj_name = parts[0], parts[2], parts[3], parts[4]
        else:
            raise PlanError(
                f"{step.id}: annotation {name}: {ref!r} is not <group>/namespaces/<namespace>/<kind>/<name> "
                "or <group>/<kind>/<name> (the core group empty: /namespaces/default/ConfigMap/settings)"
            )
        if not kind or not obj_name:
            raise PlanError(f"{step.id}: annotation {name}: {ref!r} names no kind or no name")
        target = self.by_key.get(ObjectKey(group, kind, namespace, obj_name))
        if target is None:
            raise PlanError(f"{step.id}: annotation {name}: {ref} is not in the bundle")
        return target

    # --- webhooks ------------------------------------------------------------------------------------------
    def _webhooks(self, steps: list[PlannedObject]) -> None:
        backends: dict[str, PlannedBackend] = {}
        matchers = self.matchers
        for step in steps:
            key, obj = step.key, step.obj
            if (key.group, key.kind) not in rules.WEBHOOK_CONFIG_KINDS:
                continue
            inject = (meta_of(obj).get("annotations") or {}).get(rules.INJECT_CA_ANNOTATION)
            for hook in obj.get("webhooks") or []:
                backend = self._backend(backends, step, hook, inject)
                if hook.get("failurePolicy", "Fail") == "Fail":
                    matchers.append((hook, backend, step))
        for step, obj, key in ((s, s.obj, s.key) for s in steps):
            if (key.group, key.kind) in rules.WEBHOOK_CONFIG_KINDS:
                continue
            for hook, backend, _ in matchers:
                if self._admits(hook, key, obj):
                    self.edge(step, backend, rules.WEBHOOK)
            crd_conv = self._conversion_backend(backends, step, key, obj)
            if crd_conv is not None:
                # Custom resources of a CRD with a conversion webhook wait for that backend.
                for other in steps:
                    if self.crds.get((other.key.group, other.key.kind)) is step:
                        self.edge(other, crd_conv, rules.CONVERSION)
            if (key.group, key.kind) == ("apiregistration.k8s.io", "APIService"):
                group = str((obj.get("spec") or {}).get("group", ""))
                for other in steps:
                    if other.key.group == group and other is not step:
                        self.edge(other, step, rules.APISERVICE)

    def _operators(self, steps: list[PlannedObject]) -> None:
        """A workload waits for the CRDs of its own application that its ServiceAccount may list or watch: see
        :mod:`kfctl.plan.operands`. Never an edge that closes a cycle (a CRD that itself waits, through
        others, for the workload)."""
        crds_of: dict[str, list[tuple[PlannedObject, str, str]]] = {}
        for (group, _kind), crd in self.crds.items():
            crds_of.setdefault(crd.app, []).append((crd, group, self.plurals[(group, _kind)]))
        for step, key, pod in self._workloads(steps):
            account = service_account(pod)
            for crd, group, plural in crds_of.get(step.app, []):
                if self.grants.reads(key.namespace, account, group, plural) and not self._waits_for(crd, step):
                    self.edge(step, crd, rules.OPERAND_CRD)

    def _account_bindings(self, steps: list[PlannedObject]) -> None:
        """A workload is applied after what its own application gives it in place of a pod-spec reference (order
        only, as Helm orders RBAC, ConfigMaps and Secrets before workloads): the RoleBindings and
        ClusterRoleBindings that name its ServiceAccount, and — when that ServiceAccount may read them — the
        ConfigMaps and Secrets in its namespace, which a controller may get through the API at start. Another
        application's are that application's business: an edge to them could close a cycle with ``dependsOn``.
        (A workload with no such right gets no config edges: a namespace of a thousand ConfigMaps and plain
        Deployments stays a plan of a few edges each.)"""
        bound: dict[tuple[str, str, str], list[PlannedObject]] = {}  # (application, namespace, account) → bindings
        config: dict[tuple[str, str], list[PlannedObject]] = {}  # (application, namespace) → ConfigMaps and Secrets
        for step in steps:
            key, obj = step.key, step.obj
            if key.group == "" and key.kind in ("ConfigMap", "Secret"):
                config.setdefault((step.app, key.namespace), []).append(step)
            if key.group != RBAC or key.kind not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            for subject in obj.get("subjects") or []:
                if isinstance(subject, Mapping) and subject.get("kind") == "ServiceAccount":
                    holder = (step.app, str(subject.get("namespace") or key.namespace), str(subject.get("name")))
                    bound.setdefault(holder, []).append(step)
        for step, key, pod in self._workloads(steps):
            account = service_account(pod)
            for binding in bound.get((step.app, key.namespace, account), []):
                if not self._waits_for(binding, step):
                    self.edge(step, binding, rules.ACCOUNT_BINDING)
            for item in config.get((step.app, key.namespace), []):
                plural = rules.BUILTIN_PLURALS[("", item.key.kind)]
                if self.grants.gets(key.namespace, account, "", plural) and not self._waits_for(item, step):
                    self.edge(step, item, rules.APP_CONFIG)

    def _status_writers(self, steps: list[PlannedObject]) -> None:
        """``plan.drives``: each workload → the bundle's custom resources that wait and whose kind's status its
        ServiceAccount may write (see :mod:`kfctl.plan.operands`). Not one it waits for itself: that would rank
        a chain above its own start."""
        by_resource: dict[tuple[str, str], list[PlannedObject]] = {}
        for step in steps:
            gk = (step.key.group, step.key.kind)
            if step.wait and gk in self.crds:
                by_resource.setdefault((gk[0], self.plurals[gk]), []).append(step)
        if not by_resource:
            return
        for step, key, pod in self._workloads(steps):
            kinds = self.grants.status_kinds(key.namespace, service_account(pod))
            driven = [o.id for kind in sorted(kinds) for o in by_resource.get(kind, []) if not self._waits_for(step, o)]
            if driven:
                self.plan.drives[step.id] = tuple(driven)

    def _certificate_mounts(self, steps: list[PlannedObject]) -> None:
        """A workload whose pods use a Secret that no object of the bundle is, but that a Certificate of the
        bundle makes (``spec.secretName``), is applied after that Certificate (order only: its pods are better
        created at once, to start the moment the Secret appears, than after the Certificate is Ready). The edge
        gives the Certificate, its Issuer and cert-manager's webhook the priority of the chain behind them
        (KServe's controller, whose readiness probe then waits 30 s). Never an edge closing a cycle."""
        makes: dict[tuple[str, str], PlannedObject] = {}
        for step in steps:
            key, obj = step.key, step.obj
            if (key.group, key.kind) == ("cert-manager.io", "Certificate"):
                secret = (obj.get("spec") or {}).get("secretName")
                if secret:
                    makes[(key.namespace, str(secret))] = step
        if not makes:
            return
        for step, key, pod in self._workloads(steps):
            for kind, name in sorted(_pod_references(pod)):
                cert = makes.get((key.namespace, name)) if kind == "Secret" else None
                if cert is None or ObjectKey("", "Secret", key.namespace, name) in self.by_key:
                    continue
                if not self._waits_for(cert, step):
                    self.edge(step, cert, rules.MOUNTS_CERTIFICATE)

    @staticmethod
    def _workloads(steps: list[PlannedObject]) -> Iterator[tuple[PlannedObject, ObjectKey, Mapping[str, Any]]]:
        """(step, key, pod spec) of each step that runs pods."""
        for step in steps:
            pod = pod_spec(step.key, step.obj)
            if pod is not None:
                yield step, step.key, pod

    @functools.cached_property
    def grants(self) -> Grants:
        """Who may read or write what, from the bundle's RBAC (:mod:`kfctl.plan.operands`)."""
        return Grants({k: s.obj for k, s in self.by_key.items()})

    def _waits_for(self, src: Step, dst: Step) -> bool:
        """Does ``src`` wait, directly or through others, for ``dst``? (A CRD or a Certificate waits for few: cheap.)"""
        seen: set[str] = set()
        todo = [src.id]
        while todo:
            sid = todo.pop()
            if sid == dst.id:
                return True
            if sid not in seen:
                seen.add(sid)
                todo.extend(e.dependency for e in self.plan.deps.get(sid, []))
        return False

    def _backend(
        self, backends: dict[str, PlannedBackend], config: PlannedObject, hook: Mapping[str, Any], inject: Any
    ) -> PlannedBackend:
        cc = hook.get("clientConfig") or {}
        svc = cc.get("service")
        service = ObjectKey("", "Service", str(svc.get("namespace", "")), str(svc.get("name", ""))) if svc else None
        url = "" if svc else str(cc.get("url", ""))
        label = f"{service.namespace}/{service.name}" if service else url
        sid = backend_id(label)
        step = backends.get(sid)
        cert = certificate_ref(inject)
        if step is None:
            deployment = self._serving_deployment(service) if service else None
            backend = WebhookBackend(service, url, ((config.key, str(hook.get("name"))),), deployment, cert)
            step = PlannedBackend(sid, config.app, backend)
            backends[sid] = step
            self.plan.steps[sid] = step
            self.plan.deps[sid] = []
            if service:
                self.edge(step, self.by_key.get(service), rules.BACKEND_SERVICE)
            if deployment:
                self.edge(step, self.by_key.get(deployment), rules.BACKEND_WORKLOAD)
        else:  # one more webhook calls it: the step (a frozen value) is replaced; its id, what edges name, stays
            b = step.backend
            step = dataclasses.replace(
                step,
                backend=WebhookBackend(
                    b.service,
                    b.url,
                    (*b.configs, (config.key, str(hook.get("name")))),
                    b.deployment,
                    b.certificate or cert,
                ),
            )
            backends[sid] = step
            self.plan.steps[sid] = step
        if cert is not None:
            self.edge(step, self.by_key.get(cert), rules.BACKEND_CERT)
        self.edge(step, config, rules.BACKEND_CONFIG)
        return step

    def _serving_deployment(self, service: ObjectKey) -> ObjectKey | None:
        svc = self.by_key.get(service)
        selector = (svc.obj.get("spec") or {}).get("selector") if svc else None
        if not selector:
            return None
        for step in self.by_key.values():
            key = step.key
            if key.kind == "Deployment" and key.group == "apps" and key.namespace == service.namespace:
                labels = ((step.obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
                if labels and all(labels.get(k) == v for k, v in selector.items()):
                    return key
        return None

    def _conversion_backend(
        self, backends: dict[str, PlannedBackend], step: PlannedObject, key: ObjectKey, obj: Obj
    ) -> PlannedBackend | None:
        if key.kind != "CustomResourceDefinition":
            return None
        conv = (obj.get("spec") or {}).get("conversion") or {}
        if conv.get("strategy") != "Webhook":
            return None
        if len((obj.get("spec") or {}).get("versions") or []) < 2:
            # One version: the API server never converts, so it never calls the webhook (upstream JobSet's CRD
            # names one, and JobSet's own certificate rotator never fills its caBundle).
            return None
        cc = (conv.get("webhook") or {}).get("clientConfig") or {}
        inject = (meta_of(obj).get("annotations") or {}).get(rules.INJECT_CA_ANNOTATION)
        return self._backend(backends, step, {"name": f"conversion {key.name}", "clientConfig": cc}, inject)

    def _admits(self, hook: Mapping[str, Any], key: ObjectKey, obj: Obj) -> bool:
        """Would the API server call this webhook when creating ``obj``? Best effort, offline."""
        plural = self.plurals.get((key.group, key.kind)) or rules.guess_plural(key.kind)
        scope = "Namespaced" if key.namespace else "Cluster"
        labels = meta_of(obj).get("labels") or {}
        if not matches(hook.get("objectSelector"), labels):
            return False
        if key.namespace and hook.get("namespaceSelector"):
            ns_step = self.by_key.get(ObjectKey("", "Namespace", "", key.namespace))
            ns_labels = dict(meta_of(ns_step.obj).get("labels") or {}) if ns_step else {}
            ns_labels["kubernetes.io/metadata.name"] = key.namespace
            if not matches(hook.get("namespaceSelector"), ns_labels):
                return False
        for rule in hook.get("rules") or []:
            ops = rule.get("operations") or []
            if "CREATE" not in ops and "*" not in ops:
                continue
            groups = rule.get("apiGroups") or []
            if "*" not in groups and key.group not in groups:
                continue
            resources = rule.get("resources") or []
            if "*" not in resources and plural not in resources and "*/*" not in resources:
                continue
            if rule.get("scope", "*") not in ("*", scope):
                continue
            return True
        return False

    def _admitted_pods(self, steps: list[PlannedObject]) -> None:
        """A workload's pods pass the Fail webhooks that admit pods: see :mod:`kfctl.plan.podhooks`. Runs
        last, as whether the backend needs the workload depends on every other edge (dependsOn included)."""
        reach = Reachability(self.plan, {backend.id for _, backend, _ in self.matchers})
        for step in steps:
            pod = pod_template(step.key, step.obj)
            if pod is None:
                continue
            for hook, backend, config in self.matchers:
                if not self._admits(hook, key_of(pod), pod):
                    continue
                if reach.reaches(backend.id, step.id):
                    self.edge(config, step, rules.ADMITS_ITS_NEEDS)
                    reach.drawn(config.id, step.id)
                else:
                    self.edge(step, backend, rules.POD_WEBHOOK)
                    reach.drawn(step.id, backend.id)

    # --- applications ------------------------------------------------------------------------------------
    def _applications(self, steps: list[PlannedObject]) -> None:
        """``dependsOn`` edges. A dependent waits for the API its dependency serves, not for all of it: what
        the dependent actually needs of the other's running parts is already an edge of its own (a webhook
        that admits its objects or pods waits for that webhook's backend; a Certificate for cert-manager's
        webhook). Waiting for every workload of the dependency chained the operators' start-up times one
        after another (cert-manager, then JobSet's controller, then Trainer's). An application that serves
        no API (a database, a dashboard) is still waited for whole: ordering is all ``dependsOn`` can mean."""
        members: dict[str, list[Step]] = {}
        for step in self.plan.steps.values():
            members.setdefault(step.app, []).append(step)
        app_steps: dict[str, PlannedGate] = {}
        for app in self.plan.applications:
            if not any(app.name in a.depends_on for a in self.plan.applications):
                continue
            s = PlannedGate(application_id(app.name), app.name)
            app_steps[app.name] = s
            self.plan.steps[s.id] = s
            self.plan.deps[s.id] = []
            mine = members.get(app.name, [])
            api = [m for m in mine if isinstance(m, PlannedObject) and (m.key.group, m.key.kind) in rules.API_KINDS]
            for m in api or mine:
                self.edge(s, m, rules.APP_API if api else rules.APP_MEMBER)
        self.plan.hoisted = hoisted_steps(
            [
                Need(s.id, s.app, e.dependency, e.rule)
                for s in steps
                for e in self.plan.deps.get(s.id, [])
                if isinstance(self.plan.steps[e.dependency], PlannedObject)
            ],
            owner={s.id: s.app for s in steps},
            held=_waited_for(self.plan.applications),
        )
        for app in self.plan.applications:
            for dep in app.depends_on:
                target = app_steps.get(dep)
                for m in members.get(app.name, []):
                    if m.id not in self.plan.hoisted:
                        self.edge(m, target, rules.DEPENDS_ON)


def _waited_for(applications: Sequence[Application]) -> dict[str, frozenset[str]]:
    """Every application with ``dependsOn`` → all the applications it waits for, transitively."""
    direct = {a.name: set(a.depends_on) for a in applications}
    out: dict[str, frozenset[str]] = {}
    for app in direct:
        if not direct[app]:
            continue
        seen: set[str] = set()
        todo = list(direct[app])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(direct.get(name, ()))
        out[app] = frozenset(seen)
    return out


def pod_spec(key: ObjectKey, obj: Obj) -> Mapping[str, Any] | None:
    """The pod spec of a pod-template owner (or a bare Pod); None for anything else."""
    path = rules.POD_SPEC_PATHS.get((key.group, key.kind))
    pod: Any = obj if path else None
    for part in path or ():
        pod = pod.get(part) if isinstance(pod, Mapping) else None
    return pod if isinstance(pod, Mapping) else None


def _pod_references(pod: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    if pod.get("serviceAccountName"):
        yield "ServiceAccount", str(pod["serviceAccountName"])
    for s in pod.get("imagePullSecrets") or []:
        yield "Secret", str(s.get("name"))
    for v in pod.get("volumes") or []:
        if v.get("configMap"):
            yield "ConfigMap", str(v["configMap"].get("name"))
        if v.get("secret"):
            yield "Secret", str(v["secret"].get("secretName"))
        for src in (v.get("projected") or {}).get("sources") or []:
            if src.get("configMap"):
                yield "ConfigMap", str(src["configMap"].get("name"))
            if src.get("secret"):
                yield "Secret", str(src["secret"].get("name"))
    for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
        for ef in c.get("envFrom") or []:
            if ef.get("configMapRef"):
                yield "ConfigMap", str(ef["configMapRef"].get("name"))
            if ef.get("secretRef"):
                yield "Secret", str(ef["secretRef"].get("name"))
        for env in c.get("env") or []:
            ref = env.get("valueFrom") or {}
            if ref.get("configMapKeyRef"):
                yield "ConfigMap", str(ref["configMapKeyRef"].get("name"))
            if ref.get("secretKeyRef"):
                yield "Secret", str(ref["secretKeyRef"].get("name"))


def topological_order(plan: Plan) -> list[str]:
    """Dependencies first: the waves one after the other, each sorted by id. A cycle is a PlanError that
    prints it, edge by edge."""
    return [sid for wave in plan.waves() for sid in wave]


def _cycle_error(plan: Plan, cycle: list[str]) -> PlanError:
    details = []
    for a, b in itertools.pairwise(cycle):
        rule = next(e.rule for e in plan.deps[a] if e.dependency == b)
        details.append(f"{a} waits for {b}: {rule.phrase}")
    return PlanError(
        "dependency cycle: " + " → ".join(cycle),
        details=details,
        hint=(
            f"remove one of these dependencies (a {rules.HINT_ANNOTATION} or "
            f"{rules.STANDARD_DEPENDS_ON_ANNOTATION} annotation, or a dependsOn entry)"
        ),
    )


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def certificate_ref(inject: Any) -> ObjectKey | None:
    """The Certificate a ``cert-manager.io/inject-ca-from: <namespace>/<name>`` annotation names, or None when it
    names none an API server could hold. Upstream JobSet ships its CRD with the kustomize variables unresolved
    (``$(CERTIFICATE_NAMESPACE)/$(CERTIFICATE_NAME)``) and injects its CA itself; cert-manager's cainjector finds
    no such Certificate either, so waiting for one would wait for ever."""
    if not isinstance(inject, str) or inject.count("/") != 1:
        return None
    namespace, name = inject.split("/")
    if not (_NAME.match(namespace) and _NAME.match(name)):
        return None
    return ObjectKey("cert-manager.io", "Certificate", namespace, name)
