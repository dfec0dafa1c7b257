"""A pod of an operator's image whose release has no binary built: ErrImagePull, never another release's binary.

The process runtime (kfctl_testbed.runtime) runs exactly the release an image names. A pod of a runnable repository
(`kserve/kserve-controller`) at a tag nothing was built for is still the runtime's: kwok leaves it not Ready,
the runtime starts no process for it and reports the container as a kubelet reports an image it cannot pull,
`waiting: ErrImagePull` with a message naming the image and the releases that are built. Needs root and the
operator binaries, like test_runtime.py. (The mapping itself: test_runtime_images.py.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from harness import poll
from kfctl_testbed import kube_rest, localcluster, runtime
from kfctl_testbed.kube_rest import JSON
from runtime_support import condition

pytestmark = pytest.mark.e2e

# Not a release (a tag that names a release would be built on first use: test_runtime_first_use.py).
IMAGE = "kserve/kserve-controller:nonexistent"


def test_a_release_without_a_binary_gets_err_image_pull_and_no_process(
    api: kube_rest.Client, namespace: str, pod_runtime: Path
) -> None:
    bin_dir = localcluster.operators_dir()
    built = runtime.built_releases("kserve/kserve-controller", bin_dir)
    assert "v0.16.0" in built, f"kserve-manager is not built in {bin_dir}"
    pods = f"/api/v1/namespaces/{namespace}/pods"
    api.create(
        pods,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "kserve-unbuilt"},
            "spec": {
                "containers": [
                    {"name": "manager", "image": IMAGE, "command": ["/manager"]},
                    {"name": "sidecar", "image": "example.invalid/sidecar:1"},
                ]
            },
        },
    )

    def pulled_failed() -> JSON | None:
        pod = api.get(f"{pods}/kserve-unbuilt") or {}
        statuses = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
        waiting = (statuses.get("manager") or {}).get("state", {}).get("waiting") or {}
        return pod if waiting.get("reason") == "ErrImagePull" else None

    pod = poll(pulled_failed, timeout=60, what="the container of an unbuilt release to be reported ErrImagePull")
    statuses = {s["name"]: s for s in pod["status"]["containerStatuses"]}
    assert statuses["manager"]["state"]["waiting"]["message"] == (
        f"e2e runtime: no binary built for {IMAGE} (built: {', '.join(built)}); add it to e2e/build-binaries"
    )
    assert (statuses["manager"]["ready"], statuses["manager"]["started"]) == (False, False)
    assert statuses["sidecar"]["ready"]  # simulated, as in any runtime pod
    ready, containers = condition(pod, "Ready"), condition(pod, "ContainersReady")
    assert ready is not None and containers is not None
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
    assert containers["message"] == "containers with unready status: [manager]"

    # A few runtime ticks later: still so (kwok never makes it Ready), and no process ran for it, ever.
    time.sleep(4)
    again = api.get(f"{pods}/kserve-unbuilt") or {}
    assert condition(again, "Ready") == ready
    assert not list(pod_runtime.glob(f"{namespace}_kserve-unbuilt_*.log"))
    state_dir = pod_runtime.parent
    assert not [ref for ref, _ in localcluster.runtime_processes(state_dir) if f"{namespace}/kserve-unbuilt" in ref]
    log = (state_dir / "logs" / "runtime.log").read_text(errors="replace")
    assert f"pod {namespace}/kserve-unbuilt container manager: e2e runtime: no binary built for {IMAGE}" in log
