"""The process runtime (kfctl_testbed.runtime) runs the real training operator on a kwok node.

kfctl installs the training operator; the runtime starts the operator's binary for its pod, with the pod's
ServiceAccount token, the cluster CA and its webhook-certificate Secret mounted where the container expects
them. The test then checks that the operator leads (the Lease names its pod), that its certificate Secret, the
mounted files and its webhook's caBundle agree, that the API server calls its validating webhook through the
egress proxy (kfctl_testbed.egress: the Service's cluster IP leads to the operator's port in its network
namespace), so an
invalid TFJob is denied by the operator itself and a valid one admitted, that it creates the seed TFJob's pods with
the TF_CONFIG it computed, that it talks to and listens on loopback only (a network namespace of its own), that the
runtime restarts it when it dies and stops it when its pod is deleted. Needs the opt-in operator binaries
(`e2e/build-binaries --operators`, which `make setup` runs; it fails without them) and root (namespaces).

TFJobs running to their end (kwok finishes training pods): test_runtime_tfjob.py; the operator pod's readiness
from its /readyz: test_runtime_readiness.py.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apply_support import install, kfctl
from harness import poll, run_cluster
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON, ApiError
from runtime_support import kill_operator, operator_logs, operator_pods, runtime_pid, started_controllers

pytestmark = pytest.mark.e2e

TFJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "runtime-seed", "namespace": "kubeflow"},
    "spec": {
        "tfReplicaSpecs": {
            role: {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "spec": {
                        "containers": [{"name": "tensorflow", "image": "example.invalid/tf:1", "command": ["true"]}]
                    }
                },
            }
            for role in ("PS", "Worker")
        }
    },
}
TFJOBS = "/apis/kubeflow.org/v1/namespaces/kubeflow/tfjobs"
# The operator's own rule (pkg/webhooks/tensorflow/tfjob_webhook.go): each replica needs a container "tensorflow".
INVALID_TFJOB = {
    **TFJOB,
    "metadata": {"name": "runtime-invalid", "namespace": "kubeflow"},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "main", "image": "example.invalid/tf:1"}]}},
            }
        }
    },
}
DENIAL = (
    'admission webhook "validator.tfjob.training-operator.kubeflow.org" denied the request: '
    "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container with "
    "name tensorflow"
)


def sockets(pid: int, *, in_its_netns: bool) -> list[str]:
    """`ss -tanp` lines of the process `pid`: in the host's network namespace or in its own."""
    prefix = ["nsenter", "-t", str(pid), "-n"] if in_its_netns else []
    out = subprocess.run([*prefix, "ss", "-Htanp"], capture_output=True, text=True, check=True).stdout
    return sorted(" ".join(line.split()[:5]) for line in out.splitlines() if f"pid={pid}," in line)


def addresses(pid: int) -> list[str]:
    out = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "ip", "-o", "addr"], capture_output=True, text=True, check=True
    ).stdout
    return sorted(line.split()[3] for line in out.splitlines())


def test_training_operator_runs_and_creates_tfjob_pods(kubeconfig: str, tmp_path: Path, pod_runtime: Path) -> None:
    runtime = pod_runtime
    app = tmp_path / "app"
    t0 = time.monotonic()
    install(app, "training-operator", kubeconfig=kubeconfig)
    applied = time.monotonic() - t0

    api = kube_rest.Client(kubeconfig)
    try:
        # The real operator, in-cluster with its pod's ServiceAccount token: it takes its leader lease, and starts
        # its job controllers once its certificate files are on disk (the Secret volume the runtime refreshes).
        [pod] = poll(lambda: operator_pods(api), timeout=30, what="the training-operator pod")
        poll(
            lambda: started_controllers(operator_logs(runtime).get(pod, "")),
            timeout=120,
            what="the training operator to acquire its lease and start its controllers",
            interval=0.5,
        )
        started = time.monotonic() - t0 - applied
        lease = api.get(
            "/apis/coordination.k8s.io/v1/namespaces/kubeflow/leases/1ca428e5.training-operator.kubeflow.org"
        )
        assert lease and lease["spec"]["holderIdentity"].startswith(f"{pod}_"), lease

        # The operator's certificate: its Secret, the mounted files and the webhook's caBundle agree.
        def certs_agree() -> bool:
            secret = api.get("/api/v1/namespaces/kubeflow/secrets/training-operator-webhook-cert") or {}
            data = secret.get("data") or {}
            webhook = api.get(
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                "validator.training-operator.kubeflow.org"
            )
            bundles = {w["clientConfig"].get("caBundle") for w in (webhook or {}).get("webhooks") or []}
            on_disk = runtime / "pods" / f"kubeflow_{pod}" / "volumes" / "cert" / "tls.crt"
            return (
                bool(data.get("tls.crt"))
                and bundles == {data.get("ca.crt")}
                and on_disk.is_file()
                and on_disk.read_bytes() == base64.b64decode(data["tls.crt"])
            )

        poll(certs_agree, timeout=30, what="the operator's Secret, mounted files and caBundle to agree")

        # Its validating webhook, called by the API server through the egress proxy: the invalid TFJob is denied by
        # the operator (until its webhook server is up, the call fails instead: "failed calling webhook").
        def denial() -> str | None:
            try:
                api.create(TFJOBS, INVALID_TFJOB)
            except ApiError as e:
                return str(json.loads(e.body)["message"]) if "denied the request" in e.body else None
            api.delete(f"{TFJOBS}/runtime-invalid")
            return "admitted without the webhook's denial"

        assert poll(denial, timeout=60, what="the operator's webhook to answer", interval=0.5) == DENIAL
        api.create(TFJOBS, TFJOB)  # valid: admitted by the same webhook
        pid = runtime_pid(operator_logs(runtime)[pod])
        routed = f"→ Service kubeflow/training-operator port 443 → pod {pod} container training-operator (pid {pid})"
        assert routed in (runtime.parent / "logs" / "runtime.log").read_text(errors="replace")
        check = run_cluster("check-loopback", "--state-dir", str(runtime.parent))
        assert check.returncode == 0, check.stdout + check.stderr

        def job_pods() -> dict[str, JSON]:
            found = {
                p["metadata"]["name"]: p
                for p in api.list(
                    "/api/v1/namespaces/kubeflow/pods",
                    query={"labelSelector": "training.kubeflow.org/job-name=runtime-seed"},
                )
            }
            return found if {"runtime-seed-ps-0", "runtime-seed-worker-0"} <= set(found) else {}

        t1 = time.monotonic()
        found = poll(job_pods, timeout=60, what="the operator to create the TFJob's pods", interval=0.5)
        created = time.monotonic() - t1
        for name, task in (("runtime-seed-worker-0", "worker"), ("runtime-seed-ps-0", "ps")):
            env = {e["name"]: e.get("value") for e in found[name]["spec"]["containers"][0].get("env") or []}
            tf_config = json.loads(env["TF_CONFIG"])
            assert tf_config["cluster"] == {
                "ps": ["runtime-seed-ps-0.kubeflow.svc:2222"],
                "worker": ["runtime-seed-worker-0.kubeflow.svc:2222"],
            }
            assert tf_config["task"] == {"type": task, "index": 0}

        # Loopback only: the operator binds :8080, :8081 and :9443 as its flags say, but in a network namespace
        # of its own that has nothing but `lo`, and it reaches the API server through the runtime's relay there.
        pid = runtime_pid(operator_logs(runtime)[pod])
        assert sockets(pid, in_its_netns=False) == []
        assert addresses(pid) == ["127.0.0.1/8", "::1/128"]
        inside = sockets(pid, in_its_netns=True)
        assert any(line.startswith("ESTAB") and f"127.0.0.1:{api.port}" in line for line in inside), inside
        print(f"\noperator pid {pid}, in its network namespace: {inside}", file=sys.stderr)

        # An exited process is restarted (the operator re-acquires its lease).
        kill_operator(pid)
        poll(
            lambda: started_controllers(operator_logs(runtime).get(pod, ""), 2),
            timeout=60,
            what="the runtime to restart the killed operator",
            interval=0.5,
        )

        # A deleted pod's process stops; its replacement's starts.
        pid = runtime_pid(operator_logs(runtime)[pod])
        api.delete(f"/api/v1/namespaces/kubeflow/pods/{pod}")
        poll(lambda: not Path(f"/proc/{pid}").exists(), timeout=60, what="the deleted pod's operator to stop")
        [replacement] = poll(
            lambda: [p for p in operator_pods(api) if p != pod], timeout=60, what="the replacement pod"
        )
        poll(
            lambda: started_controllers(operator_logs(runtime).get(replacement, "")),
            timeout=120,
            what="the replacement pod's operator to lead",
            interval=0.5,
        )
        print(
            f"\nkfctl init+generate+apply {applied:.1f} s; operator leading with controllers {started:.1f} s later; "
            f"TFJob pods {created:.1f} s after the TFJob",
            file=sys.stderr,
        )
    finally:
        api.delete(f"{TFJOBS}/runtime-seed")
        api.close()
        # The session's cluster is shared: later tests install the training operator as their own app.
        run = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
