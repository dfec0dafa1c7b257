"""The plan in brief: what `kfctl plan` shows by default, so the whole catalog fits one screen.

A full plan lists every object of every wave (hundreds of lines for the catalog), which answers "why does
X wait for Y?" but hides the shape of the install. The summary keeps what a person reviews: the applications
in the order they are applied and what each waits for, the exceptions to that order (hoisted shared
objects, identical copies, pod-webhook orderings) and the longest chain of waits, which bounds how long an
apply takes however many objects run in parallel. This module computes; it formats nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kfctl.plan import rules
from kfctl.plan.graph import Edge, Plan, PlannedExternal, topological_order
from kfctl.plan.hoist import Hoist

# Edges that are the application order itself, not a wait of one object for another.
_APPLICATION_RULES = frozenset({rules.APP_MEMBER.name, rules.APP_API.name, rules.DEPENDS_ON.name})
# The orderings of workloads around webhooks that admit their pods (kfctl.plan.podhooks).
POD_WEBHOOK_RULES = frozenset({rules.POD_WEBHOOK.name, rules.ADMITS_ITS_NEEDS.name})


@dataclass(frozen=True)
class ApplicationSummary:
    name: str
    objects: int
    depends_on: tuple[str, ...]
    # Other application → how many waits of this application's steps are on that application's steps
    # (a webhook backend, a CRD, a Namespace …), most first: the order dependsOn does not say.
    waits: tuple[tuple[str, int], ...]
    external: bool = False  # provided by the cluster: checked, not applied
    namespaces: tuple[str, ...] = ()  # where its namespaced objects go, sorted (the manifests say; not the KfDef)


@dataclass(frozen=True)
class Hoisted:
    step: str
    application: str
    hoist: Hoist


@dataclass(frozen=True)
class PodWebhookOrder:
    """One edge the planner drew because a failurePolicy=Fail webhook admits a workload's pods."""

    step: str
    dependency: str
    rule: rules.EdgeRule


@dataclass(frozen=True)
class PlanSummary:
    objects: int
    waves: int
    applications: tuple[ApplicationSummary, ...]  # in apply order
    hoisted: tuple[Hoisted, ...]
    copies: tuple[tuple[str, tuple[str, ...]], ...]  # step → the later applications with an identical copy
    pod_webhooks: tuple[PodWebhookOrder, ...]
    longest_chain: tuple[str, ...]  # step ids, the first applied first
    generated: int = 0  # of ``objects``, those kfctl generates (Secrets), not rendered by `generate`
    replaced: int = 0  # rendered Secrets kfctl generates instead (upstream's shared credentials): in ``objects``

    @property
    def rendered(self) -> int:
        """What `kfctl generate` counts: the objects less the generated ones, with every identical copy."""
        return self.objects - self.generated + sum(len(apps) for _, apps in self.copies)


def summarize(plan: Plan) -> PlanSummary:
    # An object several applications render is applied once but is each one's: it counts under every one of
    # them (as apply, diff and status count it), and once in ``objects``.
    counts = plan.sizes()
    namespaces: dict[str, set[str]] = {}
    for step in plan.objects():
        if step.key.namespace:
            for app in plan.applications_of(step.id):
                namespaces.setdefault(app, set()).add(step.key.namespace)
    waits = cross_application_waits(plan)
    externals = {s.app for s in plan.steps.values() if isinstance(s, PlannedExternal)}
    by_name = {a.name: a for a in plan.applications}
    apps = tuple(
        ApplicationSummary(
            name,
            counts[name],
            by_name[name].depends_on,
            tuple(sorted(waits.get(name, Counter()).items(), key=lambda kv: (-kv[1], kv[0]))),
            external=name in externals,
            namespaces=tuple(sorted(namespaces.get(name, ()))),
        )
        for name in application_order(plan)
    )
    return PlanSummary(
        objects=len(plan.objects()),
        waves=len(plan.waves()),
        applications=apps,
        hoisted=tuple(Hoisted(sid, plan.steps[sid].app, h) for sid, h in sorted(plan.hoisted.items())),
        copies=tuple(sorted(plan.copies.items())),
        pod_webhooks=tuple(
            PodWebhookOrder(sid, e.dependency, e.rule)
            for sid in sorted(plan.deps)
            for e in sorted(plan.deps[sid], key=lambda e: e.dependency)
            if e.rule.name in POD_WEBHOOK_RULES
        ),
        longest_chain=tuple(longest_chain(plan)),
        generated=sum(1 for s in plan.objects() if s.id in plan.generated and s.id not in plan.replaced),
        replaced=sum(1 for s in plan.objects() if s.id in plan.replaced),
    )


def namespace_creator(plan: Plan, namespace: str) -> str | None:
    """The application whose objects include Namespace ``namespace`` (None when none does)."""
    for step in plan.objects():
        if (step.key.group, step.key.kind, step.key.name) == ("", "Namespace", namespace):
            return step.app
    return None


def application_order(plan: Plan) -> list[str]:
    """Applications with their ``dependsOn`` first, otherwise in the KfDef's order (a depth-first walk, so
    the order stays the one the user wrote wherever dependsOn allows)."""
    depends_on = {a.name: a.depends_on for a in plan.applications}
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in depends_on:
            return
        seen.add(name)  # before the dependencies: build_plan already refused a dependsOn cycle
        for dep in depends_on[name]:
            visit(dep)
        order.append(name)

    for app in plan.applications:
        visit(app.name)
    return order


def is_wait(edge: Edge) -> bool:
    """Apply after the dependency *and* wait until it is healthy (not merely until the server accepted it)."""
    return not edge.rule.order_only


def cross_application_waits(plan: Plan) -> dict[str, Counter[str]]:
    """Application → other application → how many waits of its steps are on that one's steps.

    ``dependsOn`` itself is left out (it is printed as such); what remains is what an application needs of
    another whether or not it says so: its webhook backends, its CRDs, its Namespaces.
    """
    out: dict[str, Counter[str]] = {}
    for sid, edges in plan.deps.items():
        app = plan.steps[sid].app
        for e in edges:
            other = plan.steps[e.dependency].app
            if other != app and is_wait(e) and e.rule.name not in _APPLICATION_RULES:
                out.setdefault(app, Counter())[other] += 1
    return out


def longest_chain(plan: Plan) -> list[str]:
    """The longest path of waits (order-only edges left out), dependencies first; [] for an empty plan.

    A longest path in a DAG: one pass over the topological order, each step one longer than its longest
    waited-for dependency. Among equally long chains the one ending first in that order wins, so the
    answer is the same on every run.
    """
    length: dict[str, int] = {}
    previous: dict[str, str | None] = {}
    for sid in topological_order(plan):
        best: str | None = None
        for e in sorted(plan.deps.get(sid, []), key=lambda e: e.dependency):
            if is_wait(e) and (best is None or length[e.dependency] > length[best]):
                best = e.dependency
        length[sid] = 1 + (length[best] if best is not None else 0)
        previous[sid] = best
    end = max(length, key=lambda sid: length[sid], default=None)  # max keeps the first of equals
    chain: list[str] = []
    while end is not None:
        chain.append(end)
        end = previous[end]
    return chain[::-1]
