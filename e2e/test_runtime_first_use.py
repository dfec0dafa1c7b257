"""An operator release no one built in advance is built when a pod first names it, as a kubelet pulls an image.

The process runtime (kfctl_testbed.runtime, kfctl_testbed.firstuse) runs exactly the release an image names. For an
image of a runnable repository whose tag is a release of the operator's Go module but which e2e/build-binaries did
not build (an upstream release that pins another version, as kubeflow/manifests v1.10.2 pins KServe v0.15.0), it
builds that release from its module on first use: the container waits in ContainerCreating meanwhile, with a message
saying so, and then the process runs the new binary, cached like the others. A release the Go module proxy refuses
cannot be built: ErrImagePull with the proxy's own answer. Needs root, Go and the operator binaries, like
test_runtime.py. The oracles: the pod status the API server holds, the process's own executable (/proc/<pid>/exe),
and the proxy's answer as go reports it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from harness import poll
from kfctl_testbed import kube_rest, localcluster
from kfctl_testbed.kube_rest import JSON

pytestmark = pytest.mark.e2e

# JobSet v0.11.1: e2e/versions.env builds v0.11.0 and v0.10.1. Its go.mod requires exactly what v0.11.0's does, so
# Go's build cache already holds every dependency compiled: the build compiles JobSet's own packages and links, 5 s
# after a cold build of v0.11.0 (164 s), where a release with other dependencies (KServe v0.15.0, which
# kubeflow/manifests v1.10.2 pins: another golang.org/x/net under client-go) compiles everything again, 341 s in a
# run of the whole e2e suite. The first-use path is the same for both: the proxy's answer, the wrapper with
# upstream's directives, tidy, build, run.
BUILT_ON_FIRST_USE = ("registry.k8s.io/jobset/jobset:v0.11.1", "jobset-controller-v0.11.1", "/manager")
# Katib v0.17.0: the Go module proxy refuses every katib release before v0.19.0.
REFUSED = ("ghcr.io/kubeflow/katib/katib-controller:v0.17.0", "github.com/kubeflow/katib@v0.17.0")
BUILD_TIMEOUT_SECONDS = 1200


def waiting(api: kube_rest.Client, pods: str, name: str) -> JSON:
    pod = api.get(f"{pods}/{name}") or {}
    [status] = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict((status.get("state") or {}).get("waiting") or {})


def create_pod(api: kube_rest.Client, pods: str, name: str, image: str, command: list[str]) -> None:
    api.create(
        pods,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "manager", "image": image, "command": command}]},
        },
    )


def test_a_release_not_built_in_advance_is_built_on_first_use_and_runs(
    api: kube_rest.Client, namespace: str, pod_runtime: Path
) -> None:
    image, binary, entrypoint = BUILT_ON_FIRST_USE
    bin_dir = localcluster.operators_dir()
    # Every run builds it: the cached binary of an earlier run is removed first (Go's build cache keeps the
    # compiled packages, so a warm machine links it again in seconds: 3 s here).
    (bin_dir / binary).unlink(missing_ok=True)
    pods = f"/api/v1/namespaces/{namespace}/pods"
    create_pod(api, pods, "jobset-first-use", image, [entrypoint])

    state = poll(
        lambda: (w := waiting(api, pods, "jobset-first-use")).get("message", "").startswith("e2e runtime:") and w,
        timeout=60,
        what="the container to wait for its release's build",
    )
    assert state["reason"] == "ContainerCreating", state
    assert state["message"].startswith("e2e runtime: building sigs.k8s.io/jobset@v0.11.1 on first use"), state
    print("while building:", state["message"])

    container_log = pod_runtime / f"{namespace}_jobset-first-use_manager.log"

    def started() -> str | None:
        text = container_log.read_text(errors="replace") if container_log.is_file() else ""
        return text if "--- runtime: start #0" in text else None

    text = poll(started, timeout=BUILD_TIMEOUT_SECONDS, what=f"the runtime to build {binary} and run it")
    # The start line is the runtime's whole command, setpriv … unshare … sh -c '<prelude, several lines>' runtime
    # <args…>: the prelude's last line execs the binary with the container's arguments.
    start = text[text.index("--- runtime: start #0") :]
    assert re.search(rf'\nexec {re.escape(shlex.quote(str(bin_dir / binary)))} "\$@"', start), start[:2000]
    assert (bin_dir / binary).is_file()
    log = (pod_runtime.parent / "logs" / "runtime.log").read_text(errors="replace")
    built = [line for line in log.splitlines() if f"first use: {binary} built in" in line]
    assert built, "the runtime's log has no line for the build"
    print(built[-1])


def test_a_release_the_module_proxy_refuses_gets_err_image_pull_with_its_answer(
    api: kube_rest.Client, namespace: str, pod_runtime: Path
) -> None:
    image, release = REFUSED
    pods = f"/api/v1/namespaces/{namespace}/pods"
    create_pod(api, pods, "katib-refused", image, ["./katib-controller"])
    state = poll(
        lambda: (w := waiting(api, pods, "katib-refused")).get("reason") == "ErrImagePull" and w,
        timeout=300,
        what="the container of a release the proxy refuses to be reported ErrImagePull",
    )
    assert state["message"].startswith(f"e2e runtime: cannot build {release}: "), state
    assert "403 Forbidden" in state["message"] and "This module version is not available" in state["message"], state
    assert not [ref for ref, _ in localcluster.runtime_processes(pod_runtime.parent) if "katib-refused" in ref]
    print("refused:", state["message"])
