"""Which binary the process runtime (kfctl_testbed.runtime) runs for an image: exactly the release the image names.

Unit tests, no cluster: image string → binary name (or none), the runtime's ErrImagePull message for a release
without a binary, kwok's runtime-pod rule (the repository, not the release), the status a kubelet would write for
it, and RUNNABLE_IMAGES against what e2e/build-binaries builds (kfctl_testbed.gobuild's recipe table). The runtime
writing that status for a real pod: test_runtime_pull_error.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kfctl_testbed import kwokstages, runtime
from kfctl_testbed.gobuild import recipes, webapps
from kfctl_testbed.gobuild.versions import Versions
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.podstatus import PodStatusWriter

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        pytest.param("repo", ("repo", "", ""), id="bare"),
        pytest.param("org/repo:v1", ("org/repo", "v1", ""), id="tag"),
        pytest.param(f"org/repo@{DIGEST}", ("org/repo", "", DIGEST), id="digest"),
        pytest.param(f"org/repo:v1@{DIGEST}", ("org/repo", "v1", DIGEST), id="tag-and-digest"),
        pytest.param("localhost:5000/org/repo", ("localhost:5000/org/repo", "", ""), id="registry-port-untagged"),
        pytest.param("localhost:5000/org/repo:v1", ("localhost:5000/org/repo", "v1", ""), id="registry-port-tag"),
        pytest.param(
            f"localhost:5000/org/repo@{DIGEST}", ("localhost:5000/org/repo", "", DIGEST), id="registry-port-digest"
        ),
    ],
)
def test_split_image(image: str, expected: tuple[str, str, str]) -> None:
    assert runtime.split_image(image) == expected
    assert runtime.image_repository(image) == expected[0]


@pytest.mark.parametrize(
    ("image", "binary"),
    [
        # the catalog's releases
        pytest.param("ghcr.io/kubeflow/training-v1/training-operator:v1-3f15cb8", "training-operator", id="to-v1.9.2"),
        pytest.param("ghcr.io/kubeflow/katib/katib-controller:v0.19.0", "katib-controller", id="katib-v0.19.0"),
        pytest.param("kserve/kserve-controller:v0.16.0", "kserve-manager", id="kserve-v0.16.0"),
        pytest.param("registry.k8s.io/jobset/jobset:v0.11.0", "jobset-controller", id="jobset-v0.11.0"),
        pytest.param(
            "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0", "trainer-controller-manager", id="trainer"
        ),
        # Kubeflow manifests v1.10.0 and v1.11.0
        pytest.param("kserve/kserve-controller:v0.14.1", "kserve-manager-v0.14.1", id="kserve-v0.14.1"),
        pytest.param("kserve/kserve-controller:v0.15.2", "kserve-manager-v0.15.2", id="kserve-v0.15.2"),
        pytest.param(
            "ghcr.io/kubeflow/training-v1/training-operator:v1-5c0e763", "training-operator-v1.9.1", id="to-v1.9.1"
        ),
        pytest.param("kubeflow/training-operator", "training-operator-v1.9.1", id="untagged-stand-in"),
        # the Go module proxy refuses katib v0.18.0: v0.19.0 stands in, named in RUNNABLE_IMAGES
        pytest.param(
            "ghcr.io/kubeflow/katib/katib-controller:v0.18.0", "katib-controller", id="katib-v0.18.0-stand-in"
        ),
        # the Spark operator v2.4.0 (manifests v1.11.0); the proxy refuses 2.1.0 (v1.10.0's): v2.4.0 stands in
        pytest.param("ghcr.io/kubeflow/spark-operator/controller:2.4.0", "spark-operator-v2.4.0", id="spark-2.4.0"),
        pytest.param("docker.io/kubeflow/spark-operator:2.1.0", "spark-operator-v2.4.0", id="spark-2.1.0-stand-in"),
        pytest.param("ghcr.io/kubeflow/spark-operator/controller:v2.4.0", None, id="spark-tags-have-no-v"),
        # Knative Serving 1.16.2 (manifests v1.10.0 and v1.11.0) by digest only: v0.43.1 stands in, the activator too
        pytest.param(
            "gcr.io/knative-releases/knative.dev/serving/cmd/webhook"
            "@sha256:d42e2f83c9018779465860fdc67ce6ada3eac8ba8c47c5c2127c0bb45f9b328a",
            "knative-serving-webhook-v0.43.1",
            id="knative-webhook-by-digest",
        ),
        pytest.param(
            "gcr.io/knative-releases/knative.dev/serving/cmd/activator"
            "@sha256:cc39d40985f7b37ba384a857d194a24ac5eae7e204aac4ed9bf4ebfd8d62e721",
            "knative-serving-activator-v0.43.1",
            id="knative-activator-by-digest",
        ),
        pytest.param(
            "gcr.io/knative-releases/knative.dev/serving/cmd/webhook@sha256:0000", None, id="knative-other-digest"
        ),
        # releases without a binary: never another release in their place
        pytest.param("ghcr.io/kubeflow/katib/katib-controller:v0.17.0", None, id="katib-v0.17.0-not-built"),
        pytest.param("kserve/kserve-controller:v0.0.1-nonexistent", None, id="unknown-tag"),
        pytest.param("kserve/kserve-controller", None, id="untagged-without-entry"),
        pytest.param("kubeflow/training-operator:latest", None, id="latest-is-no-release-we-know"),
        pytest.param("ghcr.io/kubeflow/training-v1/training-operator", None, id="untagged-of-tagged-repository"),
        # digests: the tag names the release; a digest alone names none we know
        pytest.param(f"kserve/kserve-controller:v0.14.1@{DIGEST}", "kserve-manager-v0.14.1", id="tag-and-digest"),
        pytest.param(f"kserve/kserve-controller@{DIGEST}", None, id="digest-only"),
        pytest.param(f"kubeflow/training-operator@{DIGEST}", None, id="digest-only-of-untagged-stand-in"),
        # other repositories (the name is compared as written: no registry is implied)
        pytest.param("localhost:5000/kserve/kserve-controller:v0.16.0", None, id="registry-port-other-repository"),
        pytest.param("docker.io/kserve/kserve-controller:v0.16.0", None, id="explicit-docker.io-not-normalised"),
        pytest.param("kserve/kserve-controller-other:v0.16.0", None, id="longer-repository"),
        pytest.param("example.invalid/tf:1", None, id="not-an-operator"),
    ],
)
def test_binary_name(image: str, binary: str | None) -> None:
    assert runtime.binary_name(image) == binary


def built(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def test_binary_for_needs_the_binary_built(tmp_path: Path) -> None:
    bin_dir = built(tmp_path, "kserve-manager")
    assert runtime.binary_for("kserve/kserve-controller:v0.16.0", bin_dir) == bin_dir / "kserve-manager"
    assert runtime.binary_for("kserve/kserve-controller:v0.15.2", bin_dir) is None


@pytest.mark.parametrize(
    ("binaries", "image", "message"),
    [
        pytest.param(
            ["kserve-manager"],
            "kserve/kserve-controller:v0.15.2",
            "e2e runtime: no binary built for kserve/kserve-controller:v0.15.2 (built: v0.16.0); "
            "add it to e2e/build-binaries",
            id="known-release-not-built",
        ),
        pytest.param(
            ["kserve-manager", "kserve-manager-v0.14.1", "kserve-manager-v0.15.2"],
            "kserve/kserve-controller:v0.0.1-nonexistent",
            "e2e runtime: no binary built for kserve/kserve-controller:v0.0.1-nonexistent "
            "(built: v0.14.1, v0.15.2, v0.16.0); add it to e2e/build-binaries",
            id="unknown-release",
        ),
        pytest.param(
            ["training-operator-v1.9.1"],
            "kubeflow/training-operator:latest",
            "e2e runtime: no binary built for kubeflow/training-operator:latest (built: untagged); "
            "add it to e2e/build-binaries",
            id="only-untagged-built",
        ),
        pytest.param(
            ["kserve-manager"],
            f"kserve/kserve-controller@{DIGEST}",
            f"e2e runtime: no binary built for kserve/kserve-controller@{DIGEST} (built: v0.16.0); "
            "add it to e2e/build-binaries",
            id="digest-only",
        ),
        pytest.param(["kserve-manager"], "kserve/kserve-controller:v0.16.0", None, id="built-release-runs"),
        pytest.param(["kserve-manager"], "example.invalid/tf:1", None, id="not-a-runtime-image-is-simulated"),
        pytest.param(
            ["kserve-manager"], "ghcr.io/kubeflow/katib/katib-controller:v0.19.0", None, id="nothing-of-it-built"
        ),
    ],
)
def test_pull_error(tmp_path: Path, binaries: list[str], image: str, message: str | None) -> None:
    bin_dir = built(tmp_path, *binaries)
    assert runtime.pull_error(image, bin_dir) == message
    if message is not None:  # still the runtime's pod: kwok does not make it Ready
        assert runtime.is_runtime_image(image, bin_dir)


def test_a_repository_with_any_release_built_is_kwoks_runtime_repository(tmp_path: Path) -> None:
    bin_dir = built(tmp_path, "kserve-manager-v0.14.1", "training-operator-v1.9.1")
    assert kwokstages.runnable_repositories(bin_dir) == [
        "gcr.io/istio-release/proxyv2",  # the stand-ins' (runtime.STANDIN_IMAGES): always there with a runtime
        "ghcr.io/dexidp/dex",
        "ghcr.io/kubeflow/training-v1/training-operator",  # its tag v1-5c0e763 is v1.9.1 as well
        "kserve/kserve-controller",
        "kubeflow/training-operator",
    ]
    assert kwokstages.runnable_repositories(None) == []
    # so kwok leaves a pod of kserve v0.16.0 (not built here) not Ready too; the runtime reports ErrImagePull
    assert runtime.is_runtime_image("kserve/kserve-controller:v0.16.0", bin_dir)


@pytest.mark.parametrize(
    ("image", "module", "prefix"),
    [
        pytest.param(
            "ghcr.io/dexidp/dex:v2.44.0", "kfctl_testbed.dex_standin", ["-m", "kfctl_testbed.dex_standin"], id="dex"
        ),
        pytest.param(
            "gcr.io/istio-release/proxyv2:1.28.0",
            "kfctl_testbed.istio_gateway",
            ["-m", "kfctl_testbed.istio_gateway", "--kubeconfig", "/state/kubeconfig", "--"],
            id="gateway-reads-the-cluster-as-istiod",
        ),
        pytest.param("ghcr.io/dexidp/dex:v2.46.0", None, [], id="other-release-is-no-stand-in"),
        pytest.param("kserve/kserve-controller:v0.16.0", None, [], id="a-binary-image"),
    ],
)
def test_stand_in_images_run_a_module_in_the_binarys_place(
    tmp_path: Path, image: str, module: str | None, prefix: list[str]
) -> None:
    assert runtime.standin_module(image) == module
    rt = runtime.Runtime(RecordingApi(), bin_dir=tmp_path, state_dir=tmp_path, kubeconfig="/state/kubeconfig")  # type: ignore[arg-type]
    assert rt.standin_arguments(module) == prefix
    if module is not None:  # a stand-in's release is never an image pull error
        assert runtime.is_runtime_image(image, tmp_path)
        assert runtime.pull_error(image, tmp_path) is None
    elif image.startswith("ghcr.io/dexidp/dex"):
        assert runtime.pull_error(image, tmp_path) == (
            f"e2e runtime: no binary built for {image} (built: v2.41.1, v2.44.0, v2.45.0); add it to e2e/build-binaries"
        )


def test_runnable_images_name_exactly_the_binaries_build_binaries_builds() -> None:
    """The recipe table (kfctl_testbed.gobuild.recipes, what `e2e/build-binaries --operators` builds) makes <binary> for
    each *_VERSION and <binary>-<v> for each *_OTHER_VERSIONS, and kubeflow/kubeflow's components as
    <binary>-<KUBEFLOW_COMPONENTS_VERSION>, the Spark operator as spark-operator-<SPARK_OPERATOR_VERSION>, Knative
    Serving's controller, webhook and autoscaler as knative-serving-<command>-<KNATIVE_SERVING_VERSION>, oauth2-proxy
    as oauth2-proxy-<OAUTH2_PROXY_VERSION>, and `--webapps` puts the web UIs' launchers
    <app>-<KUBEFLOW_COMPONENTS_VERSION> beside them: the runtime names exactly those, no binary it cannot find and
    none built for nothing."""
    versions = Versions.load()
    built = recipes.operator_binaries(versions) | webapps.launcher_names(versions.get("KUBEFLOW_COMPONENTS_VERSION"))
    named = {name for releases in runtime.RUNNABLE_IMAGES.values() for name in releases.values()}
    assert named == built
    assert {"training-operator-v1.9.1", "kfam-v1.10.0", "knative-serving-autoscaler-v0.43.1"} <= built


class RecordingApi:
    """What PodStatusWriter calls of kube_rest.Client: request() only (and the API server's port, which the
    runtime's port-forward leaves out)."""

    port = 6443

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> None:
        self.requests.append((method, path, body))


def test_a_container_without_a_binary_is_reported_as_a_kubelet_reports_an_image_it_cannot_pull() -> None:
    image = "kserve/kserve-controller:v0.0.1-nonexistent"
    pod: JSON = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "containers": [{"name": "manager", "image": image}, {"name": "sidecar", "image": "example.invalid/s:1"}]
        },
        "status": {"phase": "Running", "startTime": "2025-01-01T00:00:00Z"},
    }
    api = RecordingApi()
    writer = PodStatusWriter(api)  # type: ignore[arg-type]
    try:
        writer.sync(pod, {}, pull_errors={"manager": "e2e runtime: no binary built for …"})
    finally:
        writer.close()
    [(method, path, body)] = api.requests
    assert (method, path) == ("PATCH", "/api/v1/namespaces/ns/pods/p/status")
    manager, sidecar = body["status"]["containerStatuses"]
    assert manager == {
        "name": "manager",
        "image": image,
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "ErrImagePull", "message": "e2e runtime: no binary built for …"}},
        "lastState": {},
    }
    assert sidecar["ready"] and "running" in sidecar["state"]
    conditions = {c["type"]: c for c in body["status"]["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "ContainersNotReady")
    assert conditions["ContainersReady"]["message"] == "containers with unready status: [manager]"


class NothingToRead:
    def get(self, path: str, **_: Any) -> None:
        return None

    def list(self, path: str, **_: Any) -> list[JSON]:
        return []


@pytest.mark.parametrize(("lenient", "ready"), [(False, False), (True, True)])
def test_a_missing_volume_source_holds_a_container_back_but_not_a_stand_in_that_reads_the_cluster(
    tmp_path: Path, lenient: bool, ready: bool
) -> None:
    """istiod (not run here) publishes istio-ca-root-cert: a kubelet waits for it, the gateway stand-in needs none."""
    rt = runtime.Runtime(RecordingApi(), bin_dir=tmp_path, state_dir=tmp_path, read=NothingToRead())  # type: ignore[arg-type]
    pod: JSON = {
        "metadata": {"namespace": "istio-system", "name": "gw"},
        "spec": {"volumes": [{"name": "istiod-ca-cert", "configMap": {"name": "istio-ca-root-cert"}}]},
    }
    state = runtime.PodState(uid="u", root=tmp_path / "pod")
    assert rt.write_volumes(pod, state, lenient=lenient) is ready
    assert list((tmp_path / "pod" / "volumes" / "istiod-ca-cert").iterdir()) == []
