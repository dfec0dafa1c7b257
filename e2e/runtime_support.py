"""Helpers for the process-runtime tests (no tests here): the training operator kfctl installs, the processes
kfctl_testbed.runtime runs for its pods, TFJobs, and a pod's readiness seen from the outside.

The runtime logs each start of a container's process as `--- runtime: start #N (pid P): ...` in
<runtime dir>/<ns>_<pod>_<container>.log; the tests find the process, and its start, from that.
"""

from __future__ import annotations

import http.client
import os
import signal
from pathlib import Path

import pytest
from apply_support import kfctl
from harness import poll
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON, ApiError
from kfctl_testbed.netns import connect_in_netns

TFJOBS = "/apis/kubeflow.org/v1/namespaces/kubeflow/tfjobs"
FAIL_ANNOTATION = (
    "e2e.kfctl.dev/fail"  # kwok fails a finishing pod with this message (testbed/kfctl_testbed/kwok-pod-stages.yaml)
)
OPERATOR_SELECTOR = "control-plane=kubeflow-training-operator"  # upstream's label (the catalog follows it)


def install_training_operator(app: Path, *, kubeconfig: str, apply: bool = True) -> None:
    """`kfctl init`, `generate` (and `apply`, waiting for health) of the training-operator component."""
    steps = [
        ("init", str(app), "--platform", "kind", "--components", "training-operator"),
        ("generate", str(app)),
    ]
    if apply:
        steps.append(("apply", str(app), "--wait-timeout", "4m"))
    for args in steps:
        run = kfctl(*args, kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()


def uninstall(app: Path, *, kubeconfig: str) -> None:
    """The session's cluster is shared: later tests install the training operator as their own app."""
    run = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()


def tfjob(name: str, *, worker_fails: str | None = None) -> JSON:
    """A TFJob of one PS and one Worker (restartPolicy Never); `worker_fails`: the Worker's pods fail with it."""
    specs = {}
    for role in ("PS", "Worker"):
        template: JSON = {
            "spec": {"containers": [{"name": "tensorflow", "image": "example.invalid/tf:1", "command": ["true"]}]}
        }
        if role == "Worker" and worker_fails is not None:
            template["metadata"] = {"annotations": {FAIL_ANNOTATION: worker_fails}}
        specs[role] = {"replicas": 1, "restartPolicy": "Never", "template": template}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "kubeflow"},
        "spec": {"tfReplicaSpecs": specs},
    }


def create_admitted(api: kube_rest.Client, path: str, obj: JSON, *, timeout: float = 60) -> JSON:
    """Create `obj` at `path` once the webhook that admits it answers; only that call failing is retried.

    Operators can report Ready before they register their webhook handlers: the training operator (v1.9,
    cmd/training-operator.v1/main.go: setupProbeEndpoints and setupControllers) is Ready once its certificates
    exist and its webhook server listens, then registers one scheme's handler after another in a goroutine. Just
    after kfctl reports it healthy, the API server's call can still get a 404 ("failed calling webhook …: the
    server could not find the requested resource"); a user would retry, and so does this (`kfctl check` too).
    Any other error fails at once.
    """
    name = obj["metadata"]["name"]

    def create() -> JSON | None:
        try:
            return api.create(path, obj)
        except ApiError as e:
            if e.status == 409:  # an earlier try was admitted after all
                return api.get(f"{path}/{name}")
            if kube_rest.webhook_not_answering(e):
                raise  # not yet: poll counts it as not-yet and shows it on timeout
            pytest.fail(f"creating {obj['kind']} {name}: {e}", pytrace=False)

    what = f"the webhook admitting {obj['kind']} {name} to answer"
    result: JSON = poll(create, timeout=timeout, what=what, interval=0.5)
    return result


def create_tfjob(api: kube_rest.Client, job: JSON) -> JSON:
    return create_admitted(api, TFJOBS, job)


def condition(obj: JSON | None, kind: str) -> JSON | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def operator_logs(state: Path) -> dict[str, str]:
    """Pod name → its training-operator log."""
    suffix = "_training-operator.log"
    return {
        path.name[len("kubeflow_") : -len(suffix)]: path.read_text(errors="replace")
        for path in state.glob(f"kubeflow_training-operator-*{suffix}")
    }


def operator_pods(api: kube_rest.Client) -> list[str]:
    return [p["metadata"]["name"] for p in live_operator_pods(api)]


def live_operator_pods(api: kube_rest.Client) -> list[JSON]:
    return [
        p
        for p in api.list("/api/v1/namespaces/kubeflow/pods", query={"labelSelector": OPERATOR_SELECTOR})
        if not p["metadata"].get("deletionTimestamp")
    ]


def started_controllers(text: str, count: int = 1) -> bool:
    """The operator led and started its TFJob workers (at least `count` times: restarts append to the log)."""
    return (
        text.count("successfully acquired lease kubeflow/1ca428e5.training-operator.kubeflow.org") >= count
        and text.count('Starting workers\t{"controller": "tfjob-controller"') >= count
    )


def runtime_pid(text: str) -> int:
    """The pid the runtime last started (its log line `--- runtime: start #N (pid P): ...`)."""
    return int(text.rsplit("--- runtime: start #", 1)[1].split("(pid ", 1)[1].split(")", 1)[0])


def kill_operator(pid: int, binary: str = "training-operator") -> None:
    """SIGKILL `pid` (read from a runtime log), but only once it is sure to be the operator the runtime runs: its
    /proc/<pid>/exe is the operator's binary and it is in a network namespace other than ours. Anything else (a
    reused pid, a process still between fork and exec) fails the test and is never signalled."""
    from kfctl_testbed import localcluster

    expected = os.path.realpath(localcluster.operators_dir() / binary)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        netns, ours = os.readlink(f"/proc/{pid}/ns/net"), os.readlink("/proc/self/ns/net")
    except OSError as e:
        pytest.fail(f"pid {pid} is not the {binary} process (not killed): {e}", pytrace=False)
    if exe != expected or netns == ours:
        pytest.fail(
            f"pid {pid} is not the {binary} process (not killed): exe {exe} (expected {expected}), network "
            f"namespace {netns} ({'ours' if netns == ours else 'its own'})",
            pytrace=False,
        )
    os.kill(pid, signal.SIGKILL)


def process_start(pid: int) -> float:
    """When process `pid` started (wall clock, seconds): /proc/<pid>/stat's start time after boot."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line[:6] == "btime ")
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def http_status_in_netns(pid: int, port: int, path: str, headers: dict[str, str] | None = None) -> int | None:
    """The HTTP status of GET http://127.0.0.1:<port><path> inside the network namespace of `pid` (None: no
    answer), i.e. what the process answers its readiness probe (`headers`: the kubelet's, when the process tells a
    probe from other requests by them). Never dials before the process is in a network namespace of its own:
    127.0.0.1 would still be the host's."""
    try:
        if os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            return None
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.sock = connect_in_netns(pid, ("127.0.0.1", port), timeout=2)
        try:
            conn.request("GET", path, headers=headers or {})
            return conn.getresponse().status
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return None
