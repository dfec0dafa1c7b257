"""`kfctl check --smoke`: one row per way a smoke job can end, the exact verdict and message, and what is left
in the cluster afterwards (nothing, or the stuck namespace named).

The fake cluster has no operator: the test's `sleep` plays it, writing the job's conditions and its pods the
way the training operator or the trainer would once the poll loop first waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fakecluster import FakeCluster, obj, served_crd

from kfctl.check.model import CheckReport, InstalledContext
from kfctl.check.runner import installed_checks, run_checks
from kfctl.check.smoke import SCENARIOS
from kfctl.health.model import ready
from kfctl.k8s.api import ApiError
from kfctl.objects import ObjectKey

TFJOB_NS = "kfctl-smoke-test-tfjob"
PYTORCHJOB_NS = "kfctl-smoke-test-pytorchjob"
JOB_KINDS = ("TFJob", "PyTorchJob", "TrainJob")
TRAINJOB_NS = "kfctl-smoke-test-trainjob"
HINT_NOT_DONE = (
    "is training-operator running (kfctl status APPDIR)? A Pending pod names what it waits for; a longer "
    "--smoke-timeout helps only a slow image pull"
)
HINT_FAILED = (
    "the log of training-operator's controller says why: kubectl get pods -n kubeflow, then kubectl logs of its pod"
)


def cluster() -> FakeCluster:
    c = FakeCluster()
    c.put(served_crd("kubeflow.org", "TFJob", "tfjobs"))
    c.put(served_crd("kubeflow.org", "PyTorchJob", "pytorchjobs"))
    c.put(served_crd("trainer.kubeflow.org", "TrainJob", "trainjobs"))
    return c


def pod(namespace: str, **status: Any) -> dict[str, Any]:
    return obj("v1", "Pod", f"{namespace}-worker-0", namespace, status=status)


Operator = Callable[[FakeCluster], None]


def job_ends(
    kind: str, group: str, namespace: str, condition: str, message: str = "", *pods: dict[str, Any]
) -> Operator:
    """What the operator does once the job exists: its pods, then the job's terminal condition."""

    def act(c: FakeCluster) -> None:
        for p in pods:
            c.put(p)
        key = ObjectKey(group, kind, namespace, namespace)
        job = c.objects[key]
        job["status"] = {"conditions": [{"type": condition, "status": "True", "message": message}]}

    return act


def nothing(_c: FakeCluster) -> None:
    """An operator that is not running."""


def run(
    c: FakeCluster,
    operator: Operator,
    components: set[str],
    *,
    timeout: float = 10.0,
    only: str = "",
    profiles: Operator = lambda _c: None,
) -> CheckReport:
    """Run the smoke checks of ``components`` (``only`` the one named, if given) with a clock that moves a second
    per sleep; the first sleep once the job exists lets ``operator`` act; every sleep lets ``profiles`` (the
    profile controller) act."""
    now = [0.0]
    acted = [False]

    def sleep(seconds: float) -> None:
        profiles(c)
        if not acted[0] and any(k.kind in JOB_KINDS for k in c.objects):
            acted[0] = True
            operator(c)
        now[0] += seconds

    ctx = InstalledContext(
        cluster=c,
        health=lambda: {app: ready("ok") for app in components},
        namespaces=dict.fromkeys(components, "kubeflow"),
        suffix="test",
        smoke_timeout=timeout,
        clock=lambda: now[0],
        sleep=sleep,
    )
    checks = [
        ch
        for ch in installed_checks(sorted(components), components, smoke=True)
        if ch.category == "smoke" and (not only or ch.name == only)
    ]
    return run_checks(checks, ctx)


def left_behind(c: FakeCluster) -> list[str]:
    return sorted(
        str(k) for k in c.objects if k.namespace.startswith("kfctl-smoke") or k.name.startswith("kfctl-smoke")
    )


TFJOB_CASES = [
    pytest.param(
        job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded"),
        ("pass", f"TFJob {TFJOB_NS} ran to Succeeded in 1s; its namespace is deleted", ""),
        id="succeeds",
    ),
    pytest.param(
        job_ends(
            "TFJob",
            "kubeflow.org",
            TFJOB_NS,
            "Failed",
            f"TFJob {TFJOB_NS}/{TFJOB_NS} has failed because 1 Worker replica(s) failed.",
            pod(
                TFJOB_NS,
                phase="Failed",
                containerStatuses=[
                    {"name": "tensorflow", "state": {"terminated": {"exitCode": 1, "message": "sh: not found"}}}
                ],
            ),
        ),
        (
            "fail",
            f"TFJob {TFJOB_NS} failed: TFJob {TFJOB_NS}/{TFJOB_NS} has failed because 1 Worker replica(s) failed. — "
            f"pod {TFJOB_NS}-worker-0: Failed, tensorflow exited 1: sh: not found",
            HINT_FAILED,
        ),
        id="fails, the pod's exit quoted",
    ),
    pytest.param(
        nothing,
        ("fail", f"TFJob {TFJOB_NS} did not finish within 10s: training-operator made no pod for it", HINT_NOT_DONE),
        id="no operator",
    ),
    pytest.param(
        lambda c: c.put(
            pod(
                TFJOB_NS,
                phase="Pending",
                conditions=[
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 Insufficient cpu.",
                    }
                ],
            )
        ),
        (
            "fail",
            f"TFJob {TFJOB_NS} did not finish within 10s: pod {TFJOB_NS}-worker-0: Pending, not scheduled: "
            "0/3 nodes are available: 3 Insufficient cpu.",
            HINT_NOT_DONE,
        ),
        id="pod unschedulable",
    ),
    pytest.param(
        lambda c: c.put(
            pod(
                TFJOB_NS,
                phase="Pending",
                containerStatuses=[
                    {
                        "name": "tensorflow",
                        "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}},
                    }
                ],
            )
        ),
        (
            "fail",
            f"TFJob {TFJOB_NS} did not finish within 10s: pod {TFJOB_NS}-worker-0: Pending, tensorflow waiting: "
            "ImagePullBackOff (Back-off pulling image)",
            HINT_NOT_DONE,
        ),
        id="image not pulled",
    ),
]


@pytest.mark.parametrize(("operator", "expected"), TFJOB_CASES)
def test_a_tfjob_smoke_run_ends_with_its_verdict_and_leaves_nothing(
    operator: Operator, expected: tuple[str, ...]
) -> None:
    c = cluster()
    report = run(c, operator, {"training-operator"}, only="smoke-tfjob")
    [result] = report.results
    assert (result.category, result.name) == ("smoke", "smoke-tfjob")
    assert (result.verdict, result.message, result.hint) == expected
    assert left_behind(c) == []


HOOK = "validator.tfjob.training-operator.kubeflow.org"
NO_HANDLER = (
    f'Internal error occurred: failed calling webhook "{HOOK}": failed to call webhook: the server could not find '
    "the requested resource"
)


def with_a_ready_webhook(c: FakeCluster) -> FakeCluster:
    """The training operator's validating webhook, its Service and a ready endpoint: the cluster shows it up."""
    client = {"service": {"namespace": "kubeflow", "name": "training-operator"}, "caBundle": "Q0E="}
    c.put(
        obj(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "v",
            webhooks=[{"name": HOOK, "clientConfig": client}],
        )
    )
    c.put(obj("v1", "Service", "training-operator", "kubeflow", spec={"ports": [{"port": 443}]}))
    c.put(
        obj(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            "training-operator-x",
            "kubeflow",
            labels={"kubernetes.io/service-name": "training-operator"},
            endpoints=[{"addresses": ["10.0.0.7"], "conditions": {"ready": True}}],
        )
    )
    return c


@pytest.mark.parametrize(
    ("refusals", "expected"),
    [
        pytest.param(3, ("pass", f"TFJob {TFJOB_NS} ran to Succeeded in 4s; its namespace is deleted", ""), id="3s"),
        pytest.param(
            30,
            (
                "fail",
                f'webhook "{HOOK}" cannot be called: backend not ready (API server: {NO_HANDLER})',
                "the component's controller is not running or not ready: kfctl status APPDIR names its Deployment "
                "and why (kubectl get pods -n NAMESPACE, kubectl logs)",
            ),
            id="longer than SETTLE",
        ),
    ],
)
def test_a_job_is_created_once_a_webhook_that_is_still_starting_answers(
    refusals: int, expected: tuple[str, str, str]
) -> None:
    """The operator is Ready but registers its webhook handler later (training-operator v1.9): a 404 per try."""
    c = with_a_ready_webhook(cluster())
    c.fail(ObjectKey("kubeflow.org", "TFJob", TFJOB_NS, TFJOB_NS), *[ApiError(500, NO_HANDLER)] * refusals)
    [result] = run(
        c, job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded"), {"training-operator"}, only="smoke-tfjob"
    ).results
    assert (result.verdict, result.message, result.hint) == expected
    assert left_behind(c) == []


def test_the_job_runs_in_a_labelled_scratch_namespace_without_a_sidecar() -> None:
    c = cluster()
    seen: dict[str, Any] = {}

    def operator(c: FakeCluster) -> None:
        seen["namespace"] = c.objects[ObjectKey("", "Namespace", "", TFJOB_NS)]
        seen["job"] = c.objects[ObjectKey("kubeflow.org", "TFJob", TFJOB_NS, TFJOB_NS)]
        job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded")(c)

    run(c, operator, {"training-operator"}, only="smoke-tfjob")
    assert seen["namespace"]["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "kfctl",
        "kfctl.dev/smoke": "smoke-tfjob",
        "istio-injection": "disabled",
    }
    [container] = seen["job"]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("tensorflow", "docker.io/library/busybox:1.36.1")


def test_a_trainjob_runs_when_the_trainer_is_installed_and_completes() -> None:
    c = cluster()
    [result] = run(c, job_ends("TrainJob", "trainer.kubeflow.org", TRAINJOB_NS, "Complete"), {"trainer"}).results
    assert (result.name, result.verdict, result.message) == (
        "smoke-trainjob",
        "pass",
        f"TrainJob {TRAINJOB_NS} ran to Complete in 1s; its namespace is deleted",
    )
    assert left_behind(c) == []


def test_a_namespace_that_does_not_go_is_named() -> None:
    c = cluster()

    def operator(c: FakeCluster) -> None:
        c.objects[ObjectKey("", "Namespace", "", TFJOB_NS)]["metadata"]["finalizers"] = ["example.com/keep"]
        job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded")(c)

    [result] = run(c, operator, {"training-operator"}, only="smoke-tfjob").results
    assert (result.verdict, result.message, result.hint) == (
        "fail",
        f"TFJob {TFJOB_NS} ran to Succeeded in 1s; its namespace is deleted; but namespace {TFJOB_NS} is still there "
        "120s after its deletion",
        f"kubectl get all -n {TFJOB_NS} names what keeps it; a finalizer whose controller is gone is the usual cause",
    )


def test_ctrl_c_while_waiting_still_deletes_the_namespace() -> None:
    c = cluster()

    def interrupt(_c: FakeCluster) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(c, interrupt, {"training-operator"})
    assert left_behind(c) == []


@pytest.mark.parametrize(
    ("components", "smoke", "expected"),
    [
        ({"training-operator", "trainer"}, False, []),
        ({"training-operator", "trainer"}, True, ["smoke-tfjob", "smoke-pytorchjob", "smoke-trainjob"]),
        ({"kserve"}, True, []),
    ],
)
def test_smoke_checks_only_with_smoke_and_only_for_installed_components(
    components: set[str], smoke: bool, expected: list[str]
) -> None:
    checks = installed_checks(sorted(components), components, smoke=smoke)
    assert [ch.name for ch in checks if ch.category == "smoke"] == expected


def test_a_pytorchjob_runs_when_the_training_operator_is_installed_and_succeeds() -> None:
    c = cluster()
    seen: dict[str, Any] = {}

    def operator(c: FakeCluster) -> None:
        seen["job"] = c.objects[ObjectKey("kubeflow.org", "PyTorchJob", PYTORCHJOB_NS, PYTORCHJOB_NS)]
        job_ends("PyTorchJob", "kubeflow.org", PYTORCHJOB_NS, "Succeeded")(c)

    [result] = run(c, operator, {"training-operator"}, only="smoke-pytorchjob").results
    assert (result.name, result.verdict, result.message) == (
        "smoke-pytorchjob",
        "pass",
        f"PyTorchJob {PYTORCHJOB_NS} ran to Succeeded in 1s; its namespace is deleted",
    )
    [container] = seen["job"]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("pytorch", "docker.io/library/busybox:1.36.1")
    assert left_behind(c) == []


# --- In a user's namespace: the cluster serves Kubeflow's Profile ------------------------------------------------
PROFILE = ObjectKey("kubeflow.org", "Profile", "", TFJOB_NS)
OWNER = "kfctl-smoke@example.invalid"
HINT_NOT_TAKEN = (
    f"is the profile controller running (kfctl status APPDIR)? kubectl describe profile {TFJOB_NS} shows what it did"
)


def with_profiles() -> FakeCluster:
    c = cluster()
    crd = served_crd("kubeflow.org", "Profile", "profiles")
    crd["spec"]["scope"] = "Cluster"
    c.put(crd)
    return c


def takes(c: FakeCluster) -> None:
    """The profile controller: once a Profile exists, its ServiceAccount in the Profile's namespace."""
    if PROFILE in c.objects and ObjectKey("", "ServiceAccount", TFJOB_NS, "default-editor") not in c.objects:
        c.put(obj("v1", "ServiceAccount", "default-editor", TFJOB_NS))


def refuses(c: FakeCluster) -> None:
    """The profile controller when the namespace's owner annotation names someone else."""
    if PROFILE in c.objects:
        message = f"namespace already exist, but not owned by profile creator {OWNER}"
        c.objects[PROFILE]["status"] = {"conditions": [{"type": "Failed", "message": message}]}


def takes_and_keeps(c: FakeCluster) -> None:
    """The profile controller, with a finalizer it never removes (it stopped after taking the Profile)."""
    takes(c)
    if PROFILE in c.objects:
        c.objects[PROFILE]["metadata"]["finalizers"] = ["profile-finalizer"]


@pytest.mark.parametrize(
    ("profiles", "expected"),
    [
        pytest.param(
            takes,
            (
                "pass",
                f"TFJob {TFJOB_NS} ran to Succeeded in 1s in Profile {TFJOB_NS}'s namespace; both are deleted",
                "",
            ),
            id="taken",
        ),
        pytest.param(
            lambda _c: None,
            (
                "fail",
                f"the profile controller did not take Profile {TFJOB_NS} within 60s (no ServiceAccount default-editor "
                "in its namespace)",
                HINT_NOT_TAKEN,
            ),
            id="no controller",
        ),
        pytest.param(
            refuses,
            (
                "fail",
                f"the profile controller refused Profile {TFJOB_NS}: namespace already exist, but not owned by "
                f"profile creator {OWNER}",
                HINT_NOT_TAKEN,
            ),
            id="refused",
        ),
        pytest.param(
            takes_and_keeps,
            (
                "fail",
                f"TFJob {TFJOB_NS} ran to Succeeded in 1s in Profile {TFJOB_NS}'s namespace; both are deleted; but "
                f"Profile {TFJOB_NS} is still there 120s after its deletion",
                f"kubectl get all -n {TFJOB_NS} names what keeps it; a finalizer whose controller is gone is the "
                "usual cause",
            ),
            id="profile kept",
        ),
    ],
)
def test_with_profiles_the_job_runs_in_a_profiles_namespace(profiles: Operator, expected: tuple[str, ...]) -> None:
    c = with_profiles()
    operator = job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded")
    [result] = run(c, operator, {"training-operator"}, only="smoke-tfjob", profiles=profiles).results
    assert (result.verdict, result.message, result.hint) == expected
    if result.verdict == "pass":
        assert left_behind(c) == []


def test_the_profiles_namespace_is_kfctls_own_with_the_owner_the_controller_adopts() -> None:
    """The namespace is made first, naming the Profile's owner (the controller adopts such a namespace and adds
    only the labels it lacks, so istio-injection stays disabled); then the Profile."""
    c = with_profiles()
    seen: dict[str, Any] = {}

    def operator(c: FakeCluster) -> None:
        seen["namespace"] = c.objects[ObjectKey("", "Namespace", "", TFJOB_NS)]
        seen["profile"] = c.objects[PROFILE]
        job_ends("TFJob", "kubeflow.org", TFJOB_NS, "Succeeded")(c)

    run(c, operator, {"training-operator"}, only="smoke-tfjob", profiles=takes)
    assert seen["namespace"]["metadata"]["annotations"] == {"owner": OWNER}
    assert seen["namespace"]["metadata"]["labels"]["istio-injection"] == "disabled"
    assert seen["profile"]["spec"] == {"owner": {"kind": "User", "name": OWNER}}
    assert seen["profile"]["metadata"]["labels"] == {"kfctl.dev/smoke": "smoke-tfjob"}
    assert PROFILE not in c.objects


def test_each_scenario_is_judged_by_its_kinds_wait_rule() -> None:
    """What says a job ran to its end or failed is the wait rule kfctl ships for its kind (kfctl.health.waitrules)."""
    said = {s.kind: ([m.describe() for m in s.rule.ready], [m.describe() for m in s.rule.failed]) for s in SCENARIOS}
    assert said == {
        "TFJob": (["Succeeded"], ["Failed"]),
        "PyTorchJob": (["Succeeded"], ["Failed"]),
        "TrainJob": (["Complete"], ["Failed"]),
    }
