"""Upstream Kubeflow's full platform (kubeflow/manifests v1.11.0, example/): scaffolded by `kfctl init --upstream`,
generated offline, installed healthy on a fresh local cluster, re-applied without a write, deleted clean.

The release and the remote bases it fetches come from a mirror on 127.0.0.1 (kfctl_testbed.upstream_mirror:
upstream's own sources from ../shared/fixtures behind a real git server and an HTTP server), reached through
`--mirror` as a user behind one would; GitHub is out of reach (a dead proxy).

What runs: the real operators the process runtime has a binary for, at the release's own versions (katib v0.19.0,
KServe v0.15.2, Trainer v2.1.0 and its JobSet v0.10.1); kwok plays every other pod. Webhooks whose server cannot
be built here are played by the stand-in controller (e2e/standin.py), which says so below: it admits unchanged
(never injects a sidecar) and writes the caBundle as the server would for itself at start.

The oracles are the API server's: every object's health as kfctl reads it is checked again by `kfctl status`, the
writes by the audit of the run's own counts (0 created, 0 configured on a re-apply), and what is left after delete
by listing every listable kind with kfctl's label, and the namespaces.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import standin
from harness import Cluster
from kfctl_testbed import fileserver, gitserver, upstream_mirror
from test_apply_support import REPO, kfctl, kubectl

pytestmark = pytest.mark.e2e

FIXTURES = REPO.parent / "shared" / "fixtures"
NAME = "kubeflow"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> upstream_mirror.Mirror:
    if not (FIXTURES / "kubeflow-manifests-v1.11.0.tar.gz").is_file():
        pytest.skip(f"{FIXTURES} holds no kubeflow/manifests v1.11.0 (see ../shared/fixtures/README.md)")
    kustomize = ("kubectl", "kustomize")
    return upstream_mirror.build(FIXTURES, tmp_path_factory.mktemp("mirror"), kustomize=kustomize)


@contextmanager
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """HTTP(S) beyond 127.0.0.1 goes to a proxy port nothing listens on, for kfctl's fetches and git's."""
    with monkeypatch.context() as m:
        dead = f"http://127.0.0.1:{_closed_port()}"
        for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            m.setenv(var, dead)
        m.setenv("no_proxy", "127.0.0.1")
        yield


def labelled(kubeconfig: str) -> list[str]:
    kinds = kubectl(kubeconfig, "api-resources", "--verbs=list", "-o", "name").split()
    text = kubectl(kubeconfig, "get", ",".join(kinds), "-A", "-l", f"kfctl.kubeflow.org/app={NAME}", "-o", "name")
    return sorted(line for line in text.splitlines() if line)


def played_webhooks() -> list[str]:
    return [f"{w.namespace}/{w.service}: {w.who}" for w in standin.SELF_INJECTING_WEBHOOKS]


def test_v1_11_full_platform_installs_reapplies_without_writes_and_deletes_clean(
    fresh_cluster: Cluster, tmp_path: Path, mirror: upstream_mirror.Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = fresh_cluster.kubeconfig
    app = tmp_path / NAME
    with (
        no_network(monkeypatch),
        gitserver.serve(mirror.git_root) as git_server,
        fileserver.serve(mirror.files_root) as files,
    ):
        pairs = upstream_mirror.Mirror.mirrors(f"http://127.0.0.1:{git_server.port}/", files.base)
        flags = [arg for prefix, location in pairs for arg in ("--mirror", f"{prefix}={location}")]
        init = kfctl("init", str(app), "--upstream", "v1.11.0", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    # The mirror is gone: from here on nothing but the cache and the lock.
    with no_network(monkeypatch):
        offline = kfctl("generate", str(app), "--offline", kubeconfig=kubeconfig)
    assert offline.code == 0, offline.explain()
    assert json.loads(offline.stdout)["changed"] == []
    applications = json.loads(init.stdout)["applications"]
    plan = kfctl("plan", str(app), kubeconfig=kubeconfig)
    assert plan.code == 0, plan.explain()
    waves = json.loads(plan.stdout)["summary"]["waves"]

    print("\nwebhooks the stand-in plays (their servers cannot be built here):", *played_webhooks(), sep="\n  ")
    run = kfctl("apply", str(app), "--wait-timeout", "10m", kubeconfig=kubeconfig, timeout=1500)
    assert run.code == 0, run.explain()
    s = run.summary
    path = " → ".join(f"{c['step']} {c['seconds']}s" for c in s["criticalPath"])
    print(
        f"apply: {s['objects']} objects in {len(applications)} applications, {waves} waves, {s['seconds']} s; "
        f"critical path: {path}"
    )
    assert [a["name"] for a in s["applications"]] == applications
    assert all(a["state"] == "ready" for a in s["applications"]), s["applications"]
    assert s["created"] + s["unchanged"] == s["objects"]

    status = kfctl("status", str(app), kubeconfig=kubeconfig)
    assert status.code == 0, status.explain()

    again = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert again.code == 0, again.explain()
    assert (again.summary["created"], again.summary["configured"], again.summary["corrected"]) == (0, 0, 0)
    assert again.summary["pruned"] == 0
    print(f"re-apply: {again.summary['unchanged']} unchanged, 0 writes, {again.summary['seconds']} s")

    namespaces = {o.split("/", 1)[1] for o in labelled(kubeconfig) if o.startswith("namespace/")}
    gone = kfctl("delete", str(app), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert gone.code == 0, gone.explain()
    assert labelled(kubeconfig) == []
    left = set(kubectl(kubeconfig, "get", "namespaces", "-o", "name").split())
    assert not {f"namespace/{n}" for n in namespaces} & left, sorted(left)
    assert os.environ.get("KUBECONFIG") != kubeconfig  # a cluster of its own: nothing else was touched
