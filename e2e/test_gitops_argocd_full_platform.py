"""Upstream Kubeflow's full platform (kubeflow/manifests v1.11.0, example/) synced by Argo CD's real application
controller from `kfctl export --format argocd`.

The app directory is scaffolded as e2e/test_full_platform.py scaffolds it (`kfctl init --upstream v1.11.0`, the
release and its remote bases from the test bed's mirror on 127.0.0.1 through `--mirror`, GitHub out of reach),
generated, exported (`--prune`) and pushed with the export to the loopback git server; Argo CD v3.2.11's
controller and repo-server run as processes (kfctl_testbed.argocd) and sync it through one parent app-of-apps, as
docs/gitops.md tells a user: the export's argocd-cm.yaml merged into Argo CD's settings, nothing else of Argo CD
configured (no kustomize build options: the exported tree builds with the load restrictor on), `kfctl secrets
apply` once namespace kubeflow exists.

The oracles are Argo CD's own status (every Application Synced and Healthy at the pushed commit; the parent made
each wave's children only once the earlier waves' had synced, the API server's timestamps) and the API server:
every Deployment, StatefulSet and DaemonSet kfctl renders has all its replicas available, as the full-platform
tests check after `kfctl apply`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from full_platform_support import served, short_of_replicas
from gitops_support import ArgoPlatform, exported_to_argocd, wave
from harness import Cluster
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import upstream_mirror
from kfctl_testbed.flux import timestamp

from kfctl import yamlio

pytestmark = pytest.mark.e2e

NAME = "kubeflow"  # the app directory's name, so the KfDef's: Applications are kubeflow-<application>
EXPORT_PATH = f"argocd/{NAME}"
PARENT = "platform"
INSTALL_TIMEOUT = 2400.0  # see e2e/README.md: its duration under load
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Iterator[ArgoPlatform]:
    argocd_support.require_argocd()  # fails, never skips, before anything is built for nothing
    root = tmp_path_factory.mktemp("argocd-full")
    with (
        served(release_mirror) as flags,
        exported_to_argocd(
            root, module_cluster.kubeconfig, NAME, "--upstream", "v1.11.0", *flags, export=EXPORT_PATH, parent=PARENT,
            timeout=INSTALL_TIMEOUT,
        ) as synced,
    ):  # fmt: skip
        yield synced


def rendered_workloads(app_dir: Path) -> list[dict[str, Any]]:
    return [
        o
        for path in sorted((app_dir / "rendered").glob("*.yaml"))
        for o in yamlio.safe_load_all(path.read_text())
        if o and o.get("kind") in WORKLOADS
    ]


def test_argocd_syncs_upstreams_full_platform_to_healthy_wave_after_wave(platform: ArgoPlatform) -> None:
    children = platform.exported()
    live = platform.sync.applications
    waves: dict[int, list[str]] = {}
    for name, app in children.items():
        waves.setdefault(wave(app), []).append(name)
        assert live[name]["status"]["sync"]["revision"] == platform.commit, name
    print(f"\n{len(children)} Applications in {len(waves)} waves, Synced and Healthy in {platform.sync.seconds:.0f} s")
    for w in sorted(waves):
        print(f"  wave {w}: {', '.join(sorted(waves[w]))}")
    assert sorted(waves) == list(range(len(waves))) and len(waves) >= 3, waves
    created = {n: timestamp(live[n]["metadata"]["creationTimestamp"]) for n in children}
    synced = {n: timestamp(live[n]["status"]["operationState"]["finishedAt"]) for n in children}
    early = [
        f"{n} (wave {wave(children[n])}) created before {m} (wave {wave(children[m])}) synced"
        for n in children
        for m in children
        if wave(children[m]) < wave(children[n]) and created[n] < synced[m]
    ]
    assert not early, early


def test_every_workload_kfctl_renders_is_available(platform: ArgoPlatform) -> None:
    workloads = rendered_workloads(platform.app_dir)
    out = flux_support.kubectl(platform.kubeconfig, "get", "-f", "-", "-o", "json", stdin=yaml.safe_dump_all(workloads))
    doc = json.loads(out)
    live = doc["items"] if doc.get("kind") == "List" else [doc]
    assert len(live) == len(workloads) >= 40, len(live)  # 50 in v1.11.0's example
    assert short_of_replicas(live) == []
    print(f"\n{len(live)} Deployments, StatefulSets and DaemonSets available")
