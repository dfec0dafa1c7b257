"""Helpers of the full-platform e2e tests (no tests here): upstream's release mirrored on 127.0.0.1, a network
that ends at loopback, and the API server's view of what an install left.

kfctl reaches the release and the remote bases it fetches through `--mirror`, as a user behind a mirror would
(kfctl_testbed.upstream_mirror: upstream's own sources from ../shared/fixtures behind a real git server and an
HTTP server); everything else goes to a proxy port nothing listens on, so GitHub is out of reach.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from apply_support import REPO, kubectl
from kfctl_testbed import fileserver, gitserver, standin, upstream_mirror

FIXTURES = REPO.parent / "shared" / "fixtures"
USER_NS = "kubeflow-user-example-com"  # the example's Profile (common/user-namespace/base)


def build_mirror(root: Path) -> upstream_mirror.Mirror:
    """The mirror's repositories and files under ``root``; skips (naming the path) without ../shared/fixtures."""
    missing = [r for r in upstream_mirror.RELEASES.values() if not (FIXTURES / r).is_file()]
    if missing:
        pytest.skip(f"{FIXTURES} lacks {', '.join(missing)} (see ../shared/fixtures/README.md)")
    return upstream_mirror.build(FIXTURES, root, kustomize=("kubectl", "kustomize"))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def no_network() -> Iterator[None]:
    """HTTP(S) beyond 127.0.0.1 goes to a proxy port nothing listens on, for kfctl's fetches and git's."""
    with pytest.MonkeyPatch.context() as m:
        dead = f"http://127.0.0.1:{_closed_port()}"
        for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            m.setenv(var, dead)
        m.setenv("no_proxy", "127.0.0.1")
        yield


@contextmanager
def served(mirror: upstream_mirror.Mirror) -> Iterator[list[str]]:
    """The mirror's servers running, no network beyond them; the `--mirror` flags that lead kfctl there."""
    with served_files(mirror) as (flags, _):
        yield flags


@contextmanager
def served_files(mirror: upstream_mirror.Mirror) -> Iterator[tuple[list[str], fileserver.FileServer]]:
    """As `served`, and the file server (its ``requests``: what was fetched from it)."""
    with no_network(), gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        pairs = upstream_mirror.Mirror.mirrors(f"http://127.0.0.1:{git_server.port}/", files.base)
        yield [arg for prefix, location in pairs for arg in ("--mirror", f"{prefix}={location}")], files


def unpack_release(version: str, root: Path) -> Path:
    """The release's tree from the fixture (for upstream's own tests/ and files the oracles read)."""
    with tarfile.open(FIXTURES / upstream_mirror.RELEASES[version]) as tar:
        tar.extractall(root, filter="data")
    [top] = [p for p in root.iterdir() if p.name == f"manifests-{version.lstrip('v')}"]
    return top


def labelled(kubeconfig: str, name: str) -> list[str]:
    """Every object of every listable kind with kfctl's label for install ``name``, as `kubectl get -o name`."""
    kinds = kubectl(kubeconfig, "api-resources", "--verbs=list", "-o", "name").split()
    text = kubectl(kubeconfig, "get", ",".join(kinds), "-A", "-l", f"kfctl.kubeflow.org/app={name}", "-o", "name")
    return sorted(line for line in text.splitlines() if line)


def short_of_replicas(workloads: list[dict[str, Any]]) -> list[str]:
    """Of live Deployments, StatefulSets and DaemonSets, each whose replicas are not all available (StatefulSets:
    ready), as "Kind namespace/name: have/want"."""
    short: list[str] = []
    for obj in workloads:
        spec, status = obj["spec"], obj.get("status", {})
        if obj["kind"] == "DaemonSet":
            want, have = status.get("desiredNumberScheduled", 0), status.get("numberAvailable", 0)
        else:
            want = spec.get("replicas", 1)
            have = status.get("availableReplicas" if obj["kind"] == "Deployment" else "readyReplicas", 0)
        if have < want:
            short.append(f"{obj['kind']} {obj['metadata']['namespace']}/{obj['metadata']['name']}: {have}/{want}")
    return short


def played_webhooks() -> list[str]:
    return [f"{w.namespace}/{w.service}: {w.who}" for w in standin.SELF_INJECTING_WEBHOOKS]


def runs_for_real(kubeconfig: str, state_dir: Path | None, namespace: str, prefix: str, container: str) -> str:
    """The last log line of the process the runtime runs for `container` of the pod whose name starts with
    `prefix` (the oracle that a real controller, not kwok, serves it)."""
    pods = kubectl(kubeconfig, "get", "pods", "-n", namespace, "-o", "name").split()
    pod = next(p.split("/", 1)[1] for p in pods if p.split("/", 1)[1].startswith(prefix))
    logs = subprocess.run(
        [str(REPO / "e2e" / "cluster"), "--state-dir", str(state_dir), "logs", f"{namespace}/{pod}", "-c", container],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert logs.returncode == 0 and logs.stdout.strip(), f"no process ran for {namespace}/{pod}: {logs.stderr}"
    return logs.stdout.strip().splitlines()[-1][:200]


def not_our_kubeconfig(kubeconfig: str) -> bool:
    """A cluster of the test's own: $KUBECONFIG (someone else's cluster) is never the one it installed into."""
    return os.environ.get("KUBECONFIG") != kubeconfig
