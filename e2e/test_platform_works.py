"""The installed platform works: the real operators, run by kfctl_testbed.runtime, serve what users submit.

One `kfctl apply` of the catalog (the kind platform's components plus JobSet and Kubeflow Trainer) for the
module; each test then submits what a Kubeflow introduction submits and follows it through the real
controller: a PyTorchJob on the GPU node (and one that cannot fit), an InferenceService in RawDeployment
mode, a Katib Experiment, a TrainJob on the torch-distributed runtime. What the local cluster simulates
(kwok's nodes, the stand-in for cert-manager, pods that do not run the image) is in e2e/README.md.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from apply_support import REPO, kfctl
from harness import poll
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON, ApiError
from runtime_support import create_admitted

pytestmark = pytest.mark.e2e

COMPONENTS = "training-operator,katib,kserve,notebook-controller,pipelines,jobset,trainer"
NS = "kubeflow"


@dataclass
class Platform:
    api: kube_rest.Client
    runtime: Path  # the process runtime's dir: <ns>_<pod>_<container>.log
    app: Path  # the app dir kfctl installed it from
    kubeconfig: str

    def logs(self, namespace: str, prefix: str) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.runtime.glob(f"{namespace}_{prefix}*.log")))


@pytest.fixture(scope="module")
def platform(kubeconfig: str, pod_runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    app = tmp_path_factory.mktemp("platform") / "app"
    started = time.monotonic()
    for args in (
        ("init", str(app), "--platform", "kind", "--components", COMPONENTS),
        ("generate", str(app)),
        ("apply", str(app), "--wait-timeout", "8m"),
    ):
        run = kfctl(*args, kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
    print(f"\nplatform applied in {time.monotonic() - started:.1f} s", file=sys.stderr)
    api = kube_rest.Client(kubeconfig)
    try:
        yield Platform(api, pod_runtime, app, kubeconfig)
    finally:
        api.close()
        run = kfctl("delete", str(app), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()


def create(api: kube_rest.Client, path: str, obj: JSON) -> JSON:
    """Create `obj` at `path`, replacing a leftover of an earlier run of the same test."""
    name = obj["metadata"]["name"]
    if api.get(f"{path}/{name}") is not None:
        api.delete(f"{path}/{name}")
        poll(lambda: api.get(f"{path}/{name}") is None, timeout=60, what=f"the old {name} to go")
    return create_admitted(api, path, obj)


def condition(obj: JSON | None, kind: str) -> JSON:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def owned_by(obj: JSON, kind: str, name: str) -> bool:
    return any(o["kind"] == kind and o["name"] == name for o in obj["metadata"].get("ownerReferences") or [])


def replica(image: str, resources: dict[str, Any]) -> JSON:
    return {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": image, "resources": resources}]}},
    }


PYTORCHJOBS = f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs"


def pytorchjob(name: str, *, gpus: int, workers: int) -> JSON:
    limits = {"limits": {"nvidia.com/gpu": str(gpus)}}
    worker = replica("example.invalid/pytorch:2", limits) | {"replicas": workers}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"pytorchReplicaSpecs": {"Master": replica("example.invalid/pytorch:2", limits), "Worker": worker}},
    }


def job_pods(api: kube_rest.Client, name: str) -> list[JSON]:
    return api.list(f"/api/v1/namespaces/{NS}/pods", query={"labelSelector": f"training.kubeflow.org/job-name={name}"})


def test_pytorchjob_gpu_workers_land_on_the_gpu_node_and_an_oversized_one_stays_pending(platform: Platform) -> None:
    api = platform.api
    try:
        create(api, PYTORCHJOBS, pytorchjob("gpu-fit", gpus=1, workers=2))
        pods = poll(
            lambda: (
                (found := job_pods(api, "gpu-fit"))
                and len(found) == 3
                and all(p["spec"].get("nodeName") for p in found)
                and found
            ),
            timeout=90,
            what="the training operator to create gpu-fit's master and 2 workers, and the scheduler to place them",
        )
        # Only gpu-node-0 has nvidia.com/gpu capacity: the scheduler, not a nodeSelector, put them there.
        assert {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods} == {
            "gpu-fit-master-0": "gpu-node-0",
            "gpu-fit-worker-0": "gpu-node-0",
            "gpu-fit-worker-1": "gpu-node-0",
        }

        create(api, PYTORCHJOBS, pytorchjob("gpu-too-big", gpus=16, workers=1))

        def unschedulable() -> JSON:
            pods = job_pods(api, "gpu-too-big")
            scheduled = [condition(p, "PodScheduled") for p in pods]
            return next((c for c in scheduled if c.get("reason") == "Unschedulable"), {})

        reason = poll(unschedulable, timeout=90, what="the scheduler to report gpu-too-big's pods Unschedulable")
        print(f"\nscheduler on gpu-too-big: {reason['message']}", file=sys.stderr)
        assert "Insufficient nvidia.com/gpu" in reason["message"], reason
        assert all(
            p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
            for p in job_pods(api, "gpu-too-big")
        )
    finally:
        for name in ("gpu-fit", "gpu-too-big"):
            api.delete(f"{PYTORCHJOBS}/{name}")


ISVCS = f"/apis/serving.kserve.io/v1beta1/namespaces/{NS}/inferenceservices"


def test_inferenceservice_in_raw_deployment_mode_becomes_ready(platform: Platform) -> None:
    api = platform.api
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "sklearn-iris",
            "namespace": NS,
            "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"},
        },
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "sklearn"},
                    "storageUri": "gs://kfserving-examples/models/sklearn/1.0/model",
                }
            }
        },
    }
    try:
        create(api, ISVCS, isvc)
        ready = poll(
            lambda: condition(api.get(f"{ISVCS}/sklearn-iris"), "Ready").get("status") == "True",
            timeout=120,
            what="InferenceService sklearn-iris to become Ready",
        )
        assert ready
        # The controller made them, picking the catalog's ClusterServingRuntime for the sklearn format.
        deployment = api.get(f"/apis/apps/v1/namespaces/{NS}/deployments/sklearn-iris-predictor")
        service = api.get(f"/api/v1/namespaces/{NS}/services/sklearn-iris-predictor")
        assert deployment and owned_by(deployment, "InferenceService", "sklearn-iris"), deployment
        assert service and owned_by(service, "InferenceService", "sklearn-iris"), service
        [container] = [
            c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "kserve-container"
        ]
        assert container["image"] == "kserve/sklearnserver:v0.16.0"
        assert deployment["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "RawDeployment"
        status = api.get(f"{ISVCS}/sklearn-iris")["status"]
        print(f"\nInferenceService sklearn-iris: url {status.get('url')}", file=sys.stderr)
    finally:
        api.delete(f"{ISVCS}/sklearn-iris")


# katib's webhook admits Experiments only in namespaces that enable its metrics-collector injection (upstream
# Kubeflow's profiles label every user namespace so).
KATIB_NS = "katib-user"
EXPERIMENTS = f"/apis/kubeflow.org/v1beta1/namespaces/{KATIB_NS}/experiments"


def experiment(name: str, algorithm: str) -> JSON:
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {"name": name, "namespace": KATIB_NS},
        "spec": {
            "objective": {"type": "maximize", "goal": 0.99, "objectiveMetricName": "accuracy"},
            "algorithm": {"algorithmName": algorithm},
            "parallelTrialCount": 2,
            "maxTrialCount": 4,
            "maxFailedTrialCount": 2,
            "parameters": [{"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.05"}}],
            "trialTemplate": {
                "primaryContainerName": "training-container",
                "trialParameters": [{"name": "learningRate", "description": "learning rate", "reference": "lr"}],
                "trialSpec": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "training-container",
                                        "image": "example.invalid/train:1",
                                        "command": ["python", "train.py", "--lr=${trialParameters.learningRate}"],
                                    }
                                ],
                            }
                        }
                    },
                },
            },
        },
    }


def test_katib_experiment_passes_the_webhook_and_gets_its_suggestion(platform: Platform) -> None:
    api = platform.api
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": KATIB_NS, "labels": {"katib.kubeflow.org/metrics-collector-injection": "enabled"}},
    }
    create(api, "/api/v1/namespaces", namespace)
    try:
        # katib's validating webhook knows the algorithms its katib-config offers.
        with pytest.raises(ApiError) as denied:
            api.create(EXPERIMENTS, experiment("no-such-search", "no-such-algorithm"))
        print(f"\nkatib webhook: {denied.value}", file=sys.stderr)
        assert "no-such-algorithm" in str(denied.value)

        create(api, EXPERIMENTS, experiment("random-search", "random"))
        stored = api.get(f"{EXPERIMENTS}/random-search")
        # Defaults only katib's mutating webhook sets (the CRD has none).
        assert stored["spec"]["metricsCollectorSpec"]["collector"]["kind"] == "StdOut", stored["spec"]
        suggestion = poll(
            lambda: api.get(f"/apis/kubeflow.org/v1beta1/namespaces/{KATIB_NS}/suggestions/random-search"),
            timeout=90,
            what="katib-controller to create the Suggestion of Experiment random-search",
        )
        assert owned_by(suggestion, "Experiment", "random-search")
        assert suggestion["spec"]["algorithm"]["algorithmName"] == "random"
        assert condition(api.get(f"{EXPERIMENTS}/random-search"), "Created").get("status") == "True"
        # The Suggestion's algorithm service: a Deployment the controller made from katib-config.
        poll(
            lambda: api.get(f"/apis/apps/v1/namespaces/{KATIB_NS}/deployments/random-search-random"),
            timeout=60,
            what="the suggestion service's Deployment",
        )
    finally:
        for name in ("random-search", "no-such-search"):
            api.delete(f"{EXPERIMENTS}/{name}")
        api.delete(f"/api/v1/namespaces/{KATIB_NS}")


TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


def test_trainjob_on_torch_distributed_runs_as_a_jobset_and_completes(platform: Platform) -> None:
    api = platform.api
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "torch-mnist", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    }
    try:
        create(api, TRAINJOBS, trainjob)
        jobset = poll(
            lambda: api.get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/torch-mnist"),
            timeout=90,
            what="the trainer to create JobSet torch-mnist",
        )
        assert owned_by(jobset, "TrainJob", "torch-mnist")
        jobs = poll(
            lambda: api.list(
                "/apis/batch/v1/namespaces/default/jobs",
                query={"labelSelector": "jobset.sigs.k8s.io/jobset-name=torch-mnist"},
            ),
            timeout=90,
            what="JobSet torch-mnist's Jobs",
        )
        assert all(owned_by(j, "JobSet", "torch-mnist") for j in jobs)
        complete = poll(
            lambda: (
                condition(api.get(f"{TRAINJOBS}/torch-mnist"), "Complete").get("status") == "True"
                and api.get(f"{TRAINJOBS}/torch-mnist")
            ),
            timeout=180,
            what="TrainJob torch-mnist to complete",
        )
        print(f"\nTrainJob torch-mnist: {condition(complete, 'Complete')}", file=sys.stderr)
        pods = api.list(
            "/api/v1/namespaces/default/pods", query={"labelSelector": "jobset.sigs.k8s.io/jobset-name=torch-mnist"}
        )
        assert len(pods) == 2 and all(p["status"]["phase"] == "Succeeded" for p in pods), [
            (p["metadata"]["name"], p["status"].get("phase")) for p in pods
        ]
    finally:
        api.delete(f"{TRAINJOBS}/torch-mnist")


SMOKE_NAMESPACES = {"labelSelector": "kfctl.dev/smoke"}


def smoke_leftovers(api: kube_rest.Client) -> list[str]:
    """Scratch namespaces of `kfctl check --smoke`, and TFJobs, PyTorchJobs or TrainJobs of its naming, anywhere."""
    namespaces = [n["metadata"]["name"] for n in api.list("/api/v1/namespaces", query=SMOKE_NAMESPACES)]
    jobs = [
        job
        for path in ("kubeflow.org/v1/tfjobs", "kubeflow.org/v1/pytorchjobs", "trainer.kubeflow.org/v1alpha1/trainjobs")
        for job in api.list(f"/apis/{path}")
    ]
    return namespaces + [j["metadata"]["name"] for j in jobs if j["metadata"]["name"].startswith("kfctl-smoke-")]


SMOKES = {
    "smoke-tfjob": r"TFJob kfctl-smoke-[0-9a-f]{8}-tfjob ran to Succeeded in \d+s; its namespace is deleted",
    "smoke-pytorchjob": r"PyTorchJob kfctl-smoke-[0-9a-f]{8}-pytorchjob ran to Succeeded in \d+s; "
    r"its namespace is deleted",
    "smoke-trainjob": r"TrainJob kfctl-smoke-[0-9a-f]{8}-trainjob ran to Complete in \d+s; its namespace is deleted",
}


def test_check_smoke_runs_a_tfjob_a_pytorchjob_and_a_trainjob_to_their_end_and_leaves_nothing(
    platform: Platform,
) -> None:
    """The verdicts are the real training operator's and the real trainer's (their Succeeded and Complete
    conditions); the pods are finished by kwok (kfctl_testbed/kwok-pod-stages.yaml), the rest is the operators' work.
    The built-in platform has no profiles: each job runs in a scratch namespace."""
    run = kfctl("check", str(platform.app), "--smoke", "--only", ",".join(SMOKES), kubeconfig=platform.kubeconfig)
    assert run.code == 0, run.explain()
    report = json.loads(run.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert {n: (c["category"], c["verdict"]) for n, c in checks.items()} == dict.fromkeys(SMOKES, ("smoke", "pass")), (
        checks
    )
    for name, message in SMOKES.items():
        assert re.fullmatch(message, checks[name]["message"]), checks
    print("\nkfctl check --smoke:", "; ".join(checks[n]["message"] for n in SMOKES))
    assert smoke_leftovers(platform.api) == []


def test_ctrl_c_during_a_smoke_run_still_deletes_its_namespace(platform: Platform) -> None:
    argv = [sys.executable, "-m", "kfctl.cli.main", "check", str(platform.app), "--smoke", "--only", "smoke-tfjob"]
    argv += ["--kubeconfig", platform.kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    # The job's pods finish 3 s after they start, which a loaded machine can miss: the cluster's kwok (the
    # process this cluster recorded, which runs the pods' lifecycle) is held while kfctl waits for the job, so
    # the interrupt surely comes during that wait, and released for the namespace's deletion.
    kwok = cluster_process(platform, "kwok")
    proc: subprocess.Popen[str] | None = None
    os.kill(kwok, signal.SIGSTOP)
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
            # A job started in the background (`cmd &` in a script, as CI runners may) inherits SIGINT ignored,
            # and Python then installs no KeyboardInterrupt handler: kfctl gets the default, as in a terminal.
            preexec_fn=_default_sigint,
        )
        try:
            poll(lambda: api_jobs(platform.api), timeout=60, what="kfctl check --smoke to create its TFJob")
            time.sleep(1.0)  # kfctl is in its wait loop: the job cannot finish while kwok is held
            assert proc.poll() is None, "kfctl check --smoke ended while its job could not run"
            proc.send_signal(signal.SIGINT)
        finally:
            os.kill(kwok, signal.SIGCONT)
        _, stderr = proc.communicate(timeout=180)
    finally:
        os.kill(kwok, signal.SIGCONT)
        if proc is not None and proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Error (interrupted)" in stderr, stderr
    assert smoke_leftovers(platform.api) == [], "kfctl exits only once its scratch namespace is gone"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cluster_process(platform: Platform, name: str) -> int:
    """The pid of one of the session cluster's own processes, as e2e/cluster recorded it."""
    from kfctl_testbed import localcluster

    state = localcluster.State.load(platform.runtime.parent)
    proc = next((p for p in (state.procs if state else []) if p.name == name), None)
    assert proc is not None and localcluster.alive(proc), f"the cluster in {platform.runtime.parent} runs no {name}"
    return proc.pid


def api_jobs(api: kube_rest.Client) -> list[JSON]:
    return [j for j in api.list("/apis/kubeflow.org/v1/tfjobs") if j["metadata"]["name"].startswith("kfctl-smoke-")]
