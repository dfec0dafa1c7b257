"""TFJobs run to their end with the real training operator (run by kfctl_testbed.runtime, installed by kfctl).

The operator makes a pod per replica; kwok finishes each pod of a training job 3 s after it started
(kfctl_testbed/kwok-pod-stages.yaml): every container exits 0, or, when the pod carries the annotation
`e2e.kfctl.dev/fail: <message>` (set here on the Worker's pod template), exits 1 with that message. The
operator reads the pods' phases and its container's exit code (restartPolicy Never: a Failed pod fails its
replica type, and so the job) and writes the TFJob's conditions. It never quotes the container's message:
its Failed condition names the replica type that failed, its ExitedWithCode event the pod and the exit code;
the message itself is in the failed pod's status, where the test finds it. Needs the operator binaries and
root, like test_runtime.py.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import poll
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON
from runtime_support import TFJOBS, condition, create_tfjob, install_training_operator, tfjob, uninstall

pytestmark = pytest.mark.e2e

PODS = "/api/v1/namespaces/kubeflow/pods"


@pytest.fixture(scope="module")
def operator_api(
    kubeconfig: str, pod_runtime: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kube_rest.Client]:
    """An API client, once kfctl has installed the training operator (and its pod is Ready); the operator is
    removed after the module's tests."""
    app = tmp_path_factory.mktemp("tfjob") / "app"
    install_training_operator(app, kubeconfig=kubeconfig)
    api = kube_rest.Client(kubeconfig)
    try:
        yield api
    finally:
        api.close()
        uninstall(app, kubeconfig=kubeconfig)


@contextlib.contextmanager
def run_to_end(api: kube_rest.Client, job: JSON) -> Iterator[JSON]:
    """Create `job`, give it once the operator says it Succeeded or Failed (printing its conditions), delete it."""
    try:
        yield create_and_wait(api, job)
    finally:
        api.delete(f"{TFJOBS}/{job['metadata']['name']}")


def create_and_wait(api: kube_rest.Client, job: JSON) -> JSON:
    name = job["metadata"]["name"]
    t0 = time.monotonic()
    create_tfjob(api, job)

    def finished() -> JSON | None:
        current = api.get(f"{TFJOBS}/{name}")
        done = [c for c in ("Succeeded", "Failed") if (condition(current, c) or {}).get("status") == "True"]
        return current if done else None

    done = poll(finished, timeout=120, what=f"TFJob {name} to succeed or fail", interval=0.5)
    print(f"\nTFJob {name}, {time.monotonic() - t0:.1f} s after its creation:", file=sys.stderr)
    for c in done["status"]["conditions"]:
        print(f"  {c['type']}={c['status']} reason={c.get('reason')} message={c.get('message')!r}", file=sys.stderr)
    return done


def worker_termination(api: kube_rest.Client, job: JSON, *, phase: str) -> JSON:
    """The terminated state of the `tensorflow` container of the job's Worker pod, which is in `phase`."""
    worker = api.get(f"{PODS}/{job['metadata']['name']}-worker-0") or {}
    assert worker["status"]["phase"] == phase
    return next(c for c in worker["status"]["containerStatuses"] if c["name"] == "tensorflow")["state"]["terminated"]


def test_seed_tfjob_succeeds(operator_api: kube_rest.Client) -> None:
    with run_to_end(operator_api, tfjob("seed-succeeds")) as job:
        succeeded = condition(job, "Succeeded") or {}
        assert (succeeded.get("status"), succeeded.get("reason")) == ("True", "TFJobSucceeded")
        assert succeeded.get("message") == "TFJob kubeflow/seed-succeeds successfully completed."
        assert condition(job, "Failed") is None
        assert job["status"]["replicaStatuses"]["Worker"].get("succeeded") == 1

        terminated = worker_termination(operator_api, job, phase="Succeeded")
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_tfjob_fails_when_its_worker_fails(operator_api: kube_rest.Client) -> None:
    api, name = operator_api, "seed-fails"
    message = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    with run_to_end(api, tfjob(name, worker_fails=message)) as job:
        # What the operator writes: the replica type that failed, not why.
        failed = condition(job, "Failed") or {}
        assert (failed.get("status"), failed.get("reason")) == ("True", "TFJobFailed")
        assert failed.get("message") == f"TFJob kubeflow/{name} has failed because 1 Worker replica(s) failed."
        assert condition(job, "Succeeded") is None
        assert job["status"]["replicaStatuses"]["Worker"].get("failed") == 1

        # Why: in the Worker's pod, exactly as kwok wrote it, and the exit code in the operator's event.
        terminated = worker_termination(api, job, phase="Failed")
        assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (1, "Error", message)

        def exit_event() -> list[str]:
            events = api.list(
                "/api/v1/namespaces/kubeflow/events",
                query={"fieldSelector": f"involvedObject.kind=TFJob,involvedObject.name={name}"},
            )
            return [e["message"] for e in events if e.get("reason") == "ExitedWithCode" and "worker" in e["message"]]

        events = poll(exit_event, timeout=30, what="the operator's ExitedWithCode event for the Worker")
        assert f"Pod: kubeflow.{name}-worker-0 exited with code 1" in events
        print(f"operator's events: {events}; the pod's terminated state: {terminated}", file=sys.stderr)
