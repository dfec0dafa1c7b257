"""kwok's pod stages (kfctl_testbed/kwok-pod-stages.yaml): which simulated pods keep running, which finish, and how.

A pod of nothing in particular runs until deleted. A Job's pod finishes at once, a training job's pod (label
training.kubeflow.org/job-name, as the training operator sets it, or a JobSet's pod) a few seconds after it
started: every container terminated with exit code 0, reason Completed, and the pod Succeeded. Annotated
`e2e.kfctl.dev/fail: <message>`, either fails instead: exit code 1, reason Error, the message in the
container's terminated state, the pod Failed. (Pods the process runtime runs: test_runtime_readiness.py.)
"""

from __future__ import annotations

import calendar
import time

import pytest
from harness import poll
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON
from runtime_support import FAIL_ANNOTATION

pytestmark = pytest.mark.e2e

TRAINING_LABEL = "training.kubeflow.org/job-name"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


def pod(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "tensorflow", "image": "example.invalid/tf:1", "command": ["true"]},
                {"name": "sidecar", "image": "example.invalid/sidecar:1"},
            ],
        },
    }


def job(name: str, *, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> JSON:
    template = pod(name, annotations=annotations, labels=labels)
    del template["metadata"]["name"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": template},
    }


def epoch(timestamp: str) -> int:
    return calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))


def terminated(p: JSON) -> list[JSON]:
    """Each container's terminated state, or fail the test naming the ones still running."""
    states = {c["name"]: c["state"] for c in p["status"]["containerStatuses"]}
    assert all("terminated" in s for s in states.values()), states
    return [s["terminated"] for s in states.values()]


def finished(api: kube_rest.Client, path: str) -> JSON | None:
    p = api.get(path)
    return p if (p or {}).get("status", {}).get("phase") in ("Succeeded", "Failed") else None


def test_training_pod_succeeds_a_few_seconds_after_it_started_and_other_pods_keep_running(
    api: kube_rest.Client, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    api.create(pods, pod("plain"))
    api.create(pods, pod("worker", labels={TRAINING_LABEL: "mnist"}))

    done = poll(lambda: finished(api, f"{pods}/worker"), timeout=60, what="the training pod to finish")
    assert done["status"]["phase"] == "Succeeded"
    for state in terminated(done):
        assert (state["exitCode"], state["reason"]) == (0, "Completed")
        # kwok finishes it 3 s after its startTime (timestamps have whole seconds)
        assert 2 <= epoch(state["finishedAt"]) - epoch(done["status"]["startTime"]) <= 15
    ready = {c["type"]: c for c in done["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready.get("reason")) == ("False", "PodCompleted")

    # The plain pod, started at the same time, still runs (and is Ready) after the training pod finished.
    plain = api.get(f"{pods}/plain") or {}
    assert plain["status"]["phase"] == "Running"
    assert all(c["ready"] and "running" in c["state"] for c in plain["status"]["containerStatuses"])
    assert {c["type"]: c["status"] for c in plain["status"]["conditions"]}["Ready"] == "True"


def test_a_pod_marked_not_ready_by_the_node_controller_is_ready_again(api: kube_rest.Client, namespace: str) -> None:
    """The node lifecycle controller sets Ready False (reason NodeNotReady) on the pods of a node whose heartbeat
    went stale, as while the API server is down (test_reliability_apiserver.py: a replica stayed unavailable for
    good before this stage); once the node reports again its kubelet makes them Ready, and so does kwok's
    pod-ready-again stage. Patched here as that controller patches it."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    api.create(pods, pod("plain"))
    poll(lambda: ready(api, f"{pods}/plain") == ("True", ""), timeout=60, what="the pod to be Ready")
    api.request(
        "PATCH",
        f"{pods}/plain/status",
        {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeNotReady"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    poll(lambda: ready(api, f"{pods}/plain") == ("True", ""), timeout=30, what="the pod to be Ready again")
    assert (api.get(f"{pods}/plain") or {})["status"]["phase"] == "Running"


def ready(api: kube_rest.Client, path: str) -> tuple[str, str]:
    """The pod's Ready condition: its status and reason."""
    conditions = ((api.get(path) or {}).get("status") or {}).get("conditions") or []
    found = {c["type"]: c for c in conditions}.get("Ready") or {}
    return str(found.get("status", "")), str(found.get("reason", ""))


def test_training_pod_annotated_to_fail_fails_with_the_message(api: kube_rest.Client, namespace: str) -> None:
    message = 'RuntimeError: CUDA out of memory (tried to allocate "2 GiB")'
    pods = f"/api/v1/namespaces/{namespace}/pods"
    api.create(pods, pod("worker", labels={TRAINING_LABEL: "mnist"}, annotations={FAIL_ANNOTATION: message}))

    done = poll(lambda: finished(api, f"{pods}/worker"), timeout=60, what="the failing training pod to finish")
    assert done["status"]["phase"] == "Failed"
    for state in terminated(done):
        assert (state["exitCode"], state["reason"], state["message"]) == (1, "Error", message)


def test_job_pod_completes(api: kube_rest.Client, namespace: str) -> None:
    api.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job("once"))

    def complete() -> JSON | None:
        j = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/once") or {}
        return (
            j
            if any(
                c["type"] == "Complete" and c["status"] == "True" for c in j.get("status", {}).get("conditions") or []
            )
            else None
        )

    poll(complete, timeout=60, what="the Job to complete")
    [p] = api.list(f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": "job-name=once"})
    assert p["status"]["phase"] == "Succeeded"
    assert [(s["exitCode"], s["reason"]) for s in terminated(p)] == [(0, "Completed")] * 2


def test_a_jobset_pod_is_a_training_pod_and_runs_a_few_seconds_though_a_job_owns_it(
    api: kube_rest.Client, namespace: str
) -> None:
    """Trainer's TrainJobs run through JobSet, whose Jobs' pods carry the JobSet's name: they train, so they run
    like a training job's pod (upstream's trainer test waits for one to be Ready before it waits for the Job)."""
    api.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job("node-0", labels={JOBSET_LABEL: "mnist"}))
    [p] = poll(
        lambda: api.list(f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": "job-name=node-0"}),
        timeout=60,
        what="the JobSet Job's pod",
    )
    done = poll(
        lambda: finished(api, f"/api/v1/namespaces/{namespace}/pods/{p['metadata']['name']}"),
        timeout=60,
        what="the JobSet pod to finish",
    )
    assert done["status"]["phase"] == "Succeeded"
    for state in terminated(done):
        assert 2 <= epoch(state["finishedAt"]) - epoch(done["status"]["startTime"]) <= 15


def test_job_pod_annotated_to_fail_fails_the_job(api: kube_rest.Client, namespace: str) -> None:
    message = "exit status 1: dataset not found"
    api.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job("broken", annotations={FAIL_ANNOTATION: message}))

    def failed() -> JSON | None:
        j = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/broken") or {}
        return next(
            (c for c in j.get("status", {}).get("conditions") or [] if c["type"] == "Failed" and c["status"] == "True"),
            None,
        )

    condition = poll(failed, timeout=60, what="the Job to fail")
    assert condition["reason"] == "BackoffLimitExceeded"
    [p] = api.list(f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": "job-name=broken"})
    assert p["status"]["phase"] == "Failed"
    assert {(s["exitCode"], s["reason"], s["message"]) for s in terminated(p)} == {(1, "Error", message)}
