"""Fixtures for kfctl's end-to-end tests: a real Kubernetes API server (see e2e/README.md).

`kubeconfig` is $KUBECONFIG when set, else a cluster that e2e/cluster starts for the session in a
temporary state directory and stops at its end; its API server calls admission webhooks (`loopback_webhooks`
is for tests that serve one on 127.0.0.1). When no cluster can be had the tests fail (they never skip)
and say what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster, poll, run_cluster
from kfctl_testbed import kube_rest

INSTALL_HINT = (
    "kfctl's e2e tests need a Kubernetes API server. Either set KUBECONFIG to a cluster you have, or let "
    "the tests start one: that needs a Go toolchain >= 1.24 on PATH (to build etcd, kube-apiserver, "
    "kube-controller-manager, kube-scheduler and kwok once, ~20 min, into ~/.cache/kfctl-e2e; "
    "`e2e/build-binaries` does it ahead of time) or prebuilt binaries in $KFCTL_E2E_BIN_DIR, plus the "
    "dev extras in the venv (`pip install -e '.[dev]'`). With Docker and kind installed, a kind cluster "
    "is used instead."
)
UP_TIMEOUT = float(os.environ.get("KFCTL_E2E_UP_TIMEOUT", "3600"))  # includes a cold build of the binaries


def _start(state_dir: Path, *up_args: str) -> Cluster:
    args = ["up", "--state-dir", str(state_dir), *up_args]
    try:
        result = run_cluster(*args, timeout=UP_TIMEOUT)
    except subprocess.TimeoutExpired:
        run_cluster("down", "--state-dir", str(state_dir))
        pytest.fail(f"e2e/cluster up did not finish within {UP_TIMEOUT:.0f} s.\n{INSTALL_HINT}", pytrace=False)
    if result.returncode != 0:
        pytest.fail(
            f"could not start a cluster (e2e/cluster {' '.join(args)}):\n{result.stderr.strip()}\n\n{INSTALL_HINT}",
            pytrace=False,
        )
    return Cluster(kubeconfig=result.stdout.strip().splitlines()[-1], state_dir=state_dir, managed=True)


def _stop(cluster: Cluster) -> None:
    if not cluster.managed or cluster.state_dir is None:
        return
    if os.environ.get("KFCTL_E2E_KEEP_CLUSTER"):
        print(
            f"\nkeeping the e2e cluster: KUBECONFIG={cluster.kubeconfig}; stop it with "
            f"e2e/cluster --state-dir {cluster.state_dir} down",
            file=sys.stderr,
        )
        return
    result = run_cluster("down", "--state-dir", str(cluster.state_dir))
    if result.returncode != 0:
        print(f"\ne2e/cluster down failed: {result.stderr}", file=sys.stderr)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if os.environ.get("KUBECONFIG"):
        yield Cluster.from_kubeconfig(os.environ["KUBECONFIG"])
        return
    started = _start(_state_dir(tmp_path_factory, "cluster"))
    try:
        yield started
    finally:
        _stop(started)


def _state_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """Under pytest's temporary dir, unless the cluster is to be kept: pytest deletes all but its last three
    temporary dirs, and a kept cluster's state (its kubeconfig, its pids for `down`) would vanish with one."""
    if not os.environ.get("KFCTL_E2E_KEEP_CLUSTER"):
        return tmp_path_factory.mktemp(name)
    kept = Path.home() / ".cache" / "kfctl-e2e" / "kept"
    kept.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=kept))


@pytest.fixture
def fresh_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster of this test's own, started empty and stopped after it, for installs that own cluster-wide
    names (upstream trees install into `kubeflow`, `cert-manager` …) and must start from nothing. It runs the
    process runtime, so real operators serve what is installed; fails (never skips) where it cannot."""
    yield from _fresh_cluster(tmp_path_factory)


@pytest.fixture(scope="module")
def module_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """As `fresh_cluster`, shared by the tests of one module (which run in order on it), stopped after them. A
    module's CLUSTER_UP_ARGS (e.g. ``("--training-seconds", "60")``) go to its `e2e/cluster up`."""
    yield from _fresh_cluster(tmp_path_factory, *getattr(request.module, "CLUSTER_UP_ARGS", ()))


@pytest.fixture(scope="module")
def second_module_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, module_cluster: Cluster
) -> Iterator[Cluster]:
    """Another cluster of the module's own beside `module_cluster` (a fleet's second member, started after it):
    its own state directory and free ports, its own process runtime, stopped after the module's tests."""
    yield from _fresh_cluster(tmp_path_factory, *getattr(request.module, "CLUSTER_UP_ARGS", ()))


def _fresh_cluster(tmp_path_factory: pytest.TempPathFactory, *up_args: str) -> Iterator[Cluster]:
    from kfctl_testbed import localcluster

    started = _start(_state_dir(tmp_path_factory, "fresh-cluster"), *up_args)
    try:
        state = localcluster.State.load(started.state_dir) if started.state_dir else None
        runtime = next((p for p in (state.procs if state else []) if p.name == "runtime"), None)
        if runtime is None or not localcluster.alive(runtime):
            pytest.fail(
                f"the cluster in {started.state_dir} runs no process runtime (e2e/cluster up starts one as root)",
                pytrace=False,
            )
        yield started
    finally:
        _stop(started)


@pytest.fixture(scope="session")
def release_mirror(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """kubeflow/manifests' releases and the remote bases they fetch, from ../shared/fixtures, ready to serve on
    127.0.0.1 (full_platform_support.served); built once per session."""
    import full_platform_support

    return full_platform_support.build_mirror(tmp_path_factory.mktemp("mirror"))


@pytest.fixture(scope="session")
def kubeconfig(cluster: Cluster) -> str:
    """Path of a kubeconfig for a real cluster: $KUBECONFIG, or one started for this session."""
    return cluster.kubeconfig


@pytest.fixture(scope="session")
def loopback_webhooks(cluster: Cluster) -> None:
    """The cluster's API server calls admission webhooks that a test serves at https://127.0.0.1:<port>: e2e/cluster's
    local control plane does where the process runtime runs (`up` as root; webhooks are on there). Fails on one
    without webhooks; skips on kind or a cluster of $KUBECONFIG's, whose API server has another 127.0.0.1."""
    from kfctl_testbed import localcluster

    state = localcluster.State.load(cluster.state_dir) if cluster.state_dir else None
    if state is None or state.backend != "local":
        pytest.skip("the API server is not e2e/cluster's local one: it cannot reach this machine's 127.0.0.1")
    if not state.webhooks:
        pytest.fail(
            f"the cluster in {cluster.state_dir} does not call admission webhooks: e2e/cluster up turns them on only "
            "as root, where the process runtime serves the API server's egress proxy (see e2e/README.md)",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def api(kubeconfig: str) -> Iterator[kube_rest.Client]:
    """The tests' client for the session's cluster: kfctl_testbed.kube_rest, never kfctl's own kfctl/k8s (the
    tests' oracle must not be the code under test); plain JSON dicts in and out, ApiError on HTTP errors."""
    client = kube_rest.Client(kubeconfig)
    yield client
    client.close()


@pytest.fixture
def namespace(api: kube_rest.Client) -> Iterator[str]:
    """A fresh namespace, deleted (without waiting) after the test."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    api.delete(f"/api/v1/namespaces/{name}")  # a 404 is fine: the test may have deleted it


@pytest.fixture(scope="session")
def running_standin(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Makes sure a stand-in controller (kfctl_testbed.standin) acts on the cluster: the one `e2e/cluster up` runs,
    or else one started for this session."""
    from kfctl_testbed import standin as standin_module

    api = kube_rest.Client(cluster.kubeconfig)
    try:
        if standin_module.lease_holder(api) is not None:
            yield
            return
        log_path = tmp_path_factory.mktemp("standin") / "standin.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kfctl_testbed.standin", f"--kubeconfig={cluster.kubeconfig}"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            poll(
                lambda: standin_module.lease_holder(api) is not None,
                timeout=30,
                what="the stand-in controller to take its lease",
            )
            yield
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    finally:
        api.close()


@pytest.fixture(scope="session")
def pod_runtime(cluster: Cluster) -> Path:
    """The state dir of the process runtime (kfctl_testbed.runtime) that `e2e/cluster up` runs on the cluster: the real
    operators' logs are at <dir>/<ns>_<pod>_<container>.log, their volumes under <dir>/pods/<ns>_<pod>/.
    Fails (never skips) when the operators are not built or the cluster runs no runtime."""
    from kfctl_testbed import localcluster

    bin_dir = localcluster.operators_dir()
    missing = [b for b in ("training-operator", "katib-controller", "kserve-manager") if not (bin_dir / b).is_file()]
    if missing:
        pytest.fail(
            f"no operator binaries ({', '.join(missing)}) in {bin_dir}: run `e2e/build-binaries --operators` "
            "(make setup does)",
            pytrace=False,
        )
    if cluster.state_dir is None:
        pytest.skip("the process runtime runs pods on e2e/cluster's kwok nodes; this cluster is not one of those")
    state = localcluster.State.load(cluster.state_dir)
    runtime = next((p for p in (state.procs if state else []) if p.name == "runtime"), None)
    if runtime is None or not localcluster.alive(runtime):
        pytest.fail(
            f"the cluster in {cluster.state_dir} runs no process runtime (e2e/cluster up starts one as root): "
            "`e2e/cluster down` and `up` again",
            pytrace=False,
        )
    return localcluster.runtime_dir(cluster.state_dir)
