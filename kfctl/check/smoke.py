"""`kfctl check --smoke`: a tiny training job actually run to its end, the one proof that a dry run cannot give —
the operator reconciles, its pods are scheduled, they run and the operator writes the verdict.

Each scenario runs in a namespace of its own (``kfctl-smoke-<suffix>-<check>``): a Profile's, a user's namespace,
when the cluster has Kubeflow's profiles, a plain scratch namespace otherwise (`smoke_namespace` says why and how).
It is made for the job and deleted after it whatever happens: on success, on failure, on a timeout and on Ctrl-C
(deleted in a ``finally`` before the interrupt goes on). The deletion is waited for, so "leaves nothing behind" is
checked, not hoped: a namespace or Profile still there when the wait ends is named in the outcome.

The jobs run busybox (a few MB to pull) and echo one line: the operator does not look at the image, and a
smoke test should not wait minutes for a framework image. The namespace is labelled ``istio-injection:
disabled``: with Istio's sidecar injected, a job's pod never completes, because the sidecar keeps running.
The TFJob and PyTorchJob run on the training operator (v1), the TrainJob on Trainer (v2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kfctl.check import samples, smoke_namespace
from kfctl.check.admission import rejected, while_settling
from kfctl.check.model import InstalledContext, Outcome
from kfctl.health.model import condition
from kfctl.health.waitrules import SHIPPED, WaitRule
from kfctl.k8s.api import ApiError
from kfctl.objects import Obj

IMAGE = "docker.io/library/busybox:1.36.1"
COMMAND = ["sh", "-c", "echo kfctl smoke test"]
NAMESPACE_PREFIX = "kfctl-smoke-"
POLL_INTERVAL = 1.0
HINT_STUCK_NAMESPACE = (
    "kubectl get all -n {namespace} names what keeps it; a finalizer whose controller is gone is the usual cause"
)
HINT_NOT_TAKEN = (
    "is the profile controller running (kfctl status APPDIR)? kubectl describe profile {name} shows what it did"
)


@dataclass(frozen=True)
class Scenario:
    component: str  # the catalog component whose operator must run it
    check: str
    job: Obj  # created in its namespace, named as the namespace is

    @property
    def kind(self) -> str:
        return str(self.job["kind"])

    @property
    def rule(self) -> WaitRule:
        """Its kind's wait rule (kfctl.health.waitrules): the conditions that say it ran to its end or failed."""
        group = str(self.job["apiVersion"]).split("/")[0]
        rule = SHIPPED.get(group, self.kind)
        assert rule is not None, f"kfctl ships no wait rule for {self.kind}"  # tests/test_check_smoke checks each
        return rule


def _one_replica(container: str) -> Obj:
    """One replica of a training-operator job, its container named as the operator's webhook requires."""
    return {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [{"name": container, "image": IMAGE, "command": COMMAND}]}},
    }


TFJOB = Scenario(
    "training-operator",
    "smoke-tfjob",
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "spec": {"tfReplicaSpecs": {"Worker": _one_replica("tensorflow")}},
    },
)

PYTORCHJOB = Scenario(
    "training-operator",
    "smoke-pytorchjob",
    {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        # A Master alone: the operator sets its MASTER_ADDR to itself and WORLD_SIZE to 1.
        "spec": {"pytorchReplicaSpecs": {"Master": _one_replica("pytorch")}},
    },
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
)

SCENARIOS: tuple[Scenario, ...] = (TFJOB, PYTORCHJOB, TRAINJOB)


def smoke_run(scenario: Scenario) -> Callable[[InstalledContext], Outcome]:
    """The check that runs ``scenario`` to its end."""

    def run(ctx: InstalledContext) -> Outcome:
        return _run(ctx, scenario)

    return run


def _run(ctx: InstalledContext, scenario: Scenario) -> Outcome:
    made = smoke_namespace.choose(ctx, f"{NAMESPACE_PREFIX}{ctx.suffix}-{scenario.check.removeprefix('smoke-')}")
    try:
        smoke_namespace.create(ctx, made, scenario.check)
        outcome = _run_job(ctx, scenario, made)
    except smoke_namespace.NotTaken as e:
        outcome = Outcome("fail", str(e), HINT_NOT_TAKEN.format(name=made.name))
    finally:
        leftover = smoke_namespace.delete(ctx, made)
    if leftover:
        hint = HINT_STUCK_NAMESPACE.format(namespace=made.name)
        return Outcome("fail", f"{outcome.message}; but {leftover}", hint)
    return outcome


def _run_job(ctx: InstalledContext, scenario: Scenario, made: smoke_namespace.SmokeNamespace) -> Outcome:
    namespace = made.name
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
        took = ctx.clock() - start
        done = next((m for m in scenario.rule.ready if m.holds(live)), None)
        if done is not None:
            return Outcome("pass", f"{what} ran to {done.describe()} in {took:.0f}s{made.where}")
        broke = next((m for m in scenario.rule.failed if m.holds(live)), None)
        if broke is not None:
            said = condition(live, broke.condition) or {}
            reason = said.get("message") or said.get("reason") or ""
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
