"""`kfctl check --smoke`: a tiny training job actually run to its end, the one proof that a dry run cannot give —
the operator reconciles, its pods are scheduled, they run and the operator writes the verdict.

Each scenario runs in a scratch namespace of its own (``kfctl-smoke-<suffix>-<check>``), made for it and deleted
after it whatever happens: on success, on failure, on a timeout and on Ctrl-C (the namespace is deleted in a
``finally`` before the interrupt goes on). The deletion is waited for, so "leaves nothing behind" is checked, not
hoped: a namespace still there when the wait ends is named in the outcome.

The jobs run busybox (a few MB to pull) and echo one line: the operator does not look at the image, and a
smoke test should not wait minutes for a framework image. The namespace is labelled ``istio-injection:
disabled``: with Istio's sidecar injected, a job's pod never completes, because the sidecar keeps running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kfctl.check import samples
from kfctl.check.admission import rejected, while_settling
from kfctl.check.model import InstalledContext, Outcome
from kfctl.k8s.api import ApiError
from kfctl.objects import Obj

IMAGE = "docker.io/library/busybox:1.36.1"
COMMAND = ["sh", "-c", "echo kfctl smoke test"]
NAMESPACE_PREFIX = "kfctl-smoke-"
# How long the scratch namespace may take to go once deleted (its pods' grace periods, the operators' finalizers).
CLEANUP_TIMEOUT = 120.0
POLL_INTERVAL = 1.0
HINT_STUCK_NAMESPACE = (
    "kubectl get all -n {namespace} names what keeps it; a finalizer whose controller is gone is the usual cause"
)


@dataclass(frozen=True)
class Scenario:
    component: str  # the catalog component whose operator must run it
    check: str
    job: Obj  # created in the scratch namespace as ``{metadata.name}`` = the scratch namespace's name
    succeeded: str  # the condition type that says it ran to its end
    failed: str = "Failed"

    @property
    def kind(self) -> str:
        return str(self.job["kind"])


TFJOB = Scenario(
    "training-operator",
    "smoke-tfjob",
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    # The operator's webhook requires a container named "tensorflow".
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": IMAGE, "command": COMMAND}]}},
                }
            }
        },
    },
    succeeded="Succeeded",
)

TRAINJOB = Scenario(
    "trainer",
    "smoke-trainjob",
    {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "spec": {
            "runtimeRef": samples.TRAINJOB["spec"]["runtimeRef"],  # torch-distributed, which the catalog installs
            # One node; the image and command replace the runtime's PyTorch trainer.
            "trainer": {"numNodes": 1, "image": IMAGE, "command": COMMAND},
        },
    },
    succeeded="Complete",
)

SCENARIOS: tuple[Scenario, ...] = (TFJOB, TRAINJOB)


def smoke_run(scenario: Scenario) -> Callable[[InstalledContext], Outcome]:
    """The check that runs ``scenario`` to its end."""

    def run(ctx: InstalledContext) -> Outcome:
        return _run(ctx, scenario)

    return run


def _run(ctx: InstalledContext, scenario: Scenario) -> Outcome:
    namespace = f"{NAMESPACE_PREFIX}{ctx.suffix}-{scenario.check.removeprefix('smoke-')}"
    cluster = ctx.cluster
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "labels": {
                    "app.kubernetes.io/managed-by": "kfctl",
                    "kfctl.dev/smoke": scenario.check,
                    "istio-injection": "disabled",
                },
            },
        }
    )
    try:
        outcome = _run_job(ctx, scenario, namespace)
    finally:
        leftover = _delete_namespace(ctx, namespace)
    if leftover:
        hint = HINT_STUCK_NAMESPACE.format(namespace=namespace)
        return Outcome("fail", f"{outcome.message}; but {leftover}", hint)
    return outcome


def _run_job(ctx: InstalledContext, scenario: Scenario, namespace: str) -> Outcome:
    job = {**scenario.job, "metadata": {"name": namespace, "namespace": namespace}}
    what = f"{scenario.kind} {namespace}"
    api_version = str(job["apiVersion"])
    start = ctx.clock()
    try:
        while_settling(ctx, lambda: ctx.cluster.create(job))
    except ApiError as e:
        return rejected(ctx.cluster, job, e)
    while True:
        live = ctx.cluster.get(api_version, scenario.kind, namespace=namespace, name=namespace) or {}
        conditions = {c.get("type"): c for c in (live.get("status") or {}).get("conditions") or []}
        took = ctx.clock() - start
        if _true(conditions.get(scenario.succeeded)):
            return Outcome("pass", f"{what} ran to {scenario.succeeded} in {took:.0f}s; its namespace is deleted")
        if _true(conditions.get(scenario.failed)):
            reason = conditions[scenario.failed].get("message") or conditions[scenario.failed].get("reason") or ""
            pods = _pods(ctx, namespace)
            return Outcome(
                "fail",
                f"{what} failed: {reason}" + (f" — {pods}" if pods else ""),
                f"the log of {scenario.component}'s controller says why: kubectl get pods -n "
                f"{ctx.namespaces.get(scenario.component, 'kubeflow')}, then kubectl logs of its pod",
            )
        if took >= ctx.smoke_timeout:
            pods = _pods(ctx, namespace) or f"{scenario.component} made no pod for it"
            return Outcome(
                "fail",
                f"{what} did not finish within {ctx.smoke_timeout:.0f}s: {pods}",
                f"is {scenario.component} running (kfctl status APPDIR)? A Pending pod names what it waits for; a "
                "longer --smoke-timeout helps only a slow image pull",
            )
        ctx.sleep(POLL_INTERVAL)


def _true(condition: dict[str, Any] | None) -> bool:
    return bool(condition) and str((condition or {}).get("status")) == "True"


def _pods(ctx: InstalledContext, namespace: str) -> str:
    """What the scratch namespace's pods are doing, the way `kubectl get pods` and `describe` would say it."""
    pods = ctx.cluster.list("v1", "Pod", namespace=namespace)
    return "; ".join(f"pod {p['metadata']['name']}: {_pod_state(p)}" for p in pods[:3])


def _pod_state(pod: Obj) -> str:
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return f"{phase}, not scheduled: {c.get('message') or c.get('reason')}"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state:
            w = state["waiting"]
            return f"{phase}, {cs.get('name')} waiting: {w.get('reason')}" + (
                f" ({w['message']})" if w.get("message") else ""
            )
        if "terminated" in state and state["terminated"].get("exitCode"):
            t = state["terminated"]
            return f"{phase}, {cs.get('name')} exited {t.get('exitCode')}" + (
                f": {t['message']}" if t.get("message") else ""
            )
    return phase


def _delete_namespace(ctx: InstalledContext, namespace: str) -> str:
    """Delete the scratch namespace and wait until it is gone; what is left when the wait ends ("" if nothing)."""
    try:
        ctx.cluster.delete("v1", "Namespace", namespace="", name=namespace)
    except ApiError as e:
        return f"namespace {namespace} could not be deleted: {e}"
    deadline = ctx.clock() + CLEANUP_TIMEOUT
    while ctx.cluster.get("v1", "Namespace", namespace="", name=namespace) is not None:
        if ctx.clock() >= deadline:
            return f"namespace {namespace} is still there {CLEANUP_TIMEOUT:.0f}s after its deletion"
        ctx.sleep(POLL_INTERVAL)
    return ""
