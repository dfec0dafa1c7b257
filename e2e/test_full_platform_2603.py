"""Upstream's newest release, 26.03 (kubeflow/manifests renamed kubeflow/community-distribution, tagged without a
`v`): `kfctl init --upstream 26.03` from a mirror that maps the release archives to a local directory (as a user
with the release's archive on disk writes it), generated, installed healthy on a fresh local cluster, deleted clean.

Every resource line of upstream's 26.03 example/kustomization.yaml is an application. The remote bases it fetches
(argo-workflows, lws, JobSet's release asset) come from the test bed's mirror on 127.0.0.1, as in
test_full_platform.py; GitHub is out of reach (a dead proxy). What runs for real is what the process runtime has a
binary for (the operators named in test_full_platform.py's docstring; for 26.03's Knative Serving 1.21.1, its own
release, knative.dev/serving v0.48.1; Dex 2.45.0 and the Istio gateway by the test bed's stand-ins, as for v1.11.0);
kwok plays the other pods, and the stand-in controller the webhooks whose servers cannot be built here (listed
below).

The oracles are upstream's example (the applications, in its order) and the API server: every Deployment,
StatefulSet and DaemonSet the install labelled has all its replicas available, read with kubectl; after delete, no
labelled object and none of the install's namespaces is left.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml
from apply_support import kfctl, kubectl
from full_platform_support import FIXTURES, labelled, not_our_kubeconfig, played_webhooks, served, short_of_replicas
from harness import Cluster
from kfctl_testbed import upstream_mirror

pytestmark = pytest.mark.e2e

NAME = "kubeflow"
RELEASE = "26.03"
ARCHIVES = f"https://github.com/{upstream_mirror.RELEASE_ARCHIVES}"


def upstream_example_lines() -> list[str]:
    """The resource lines of the release's example/kustomization.yaml, read as YAML (upstream's file, not kfctl's)."""
    with tarfile.open(FIXTURES / upstream_mirror.RELEASES[RELEASE]) as tar:
        member = tar.extractfile(f"manifests-{RELEASE}/example/kustomization.yaml")
        assert member is not None
        resources: list[str] = yaml.safe_load(member.read())["resources"]
    return [r.split("#")[0].strip() for r in resources]


def not_available(kubeconfig: str) -> list[str]:
    """Workloads labelled for the install whose replicas are not all available, as the API server reports them."""
    text = kubectl(
        kubeconfig,
        "get",
        "deployments,statefulsets,daemonsets",
        "-A",
        "-l",
        f"kfctl.kubeflow.org/app={NAME}",
        "-o",
        "json",
    )
    return short_of_replicas(json.loads(text)["items"])


def test_26_03_scaffolds_from_a_local_mirror_installs_healthy_and_deletes_clean(
    module_cluster: Cluster, tmp_path: Path, release_mirror: upstream_mirror.Mirror
) -> None:
    kubeconfig = module_cluster.kubeconfig
    app = tmp_path / NAME
    local = release_mirror.files_root / upstream_mirror.RELEASE_ARCHIVES  # holds 26.03.tar.gz, the fixture
    with served(release_mirror) as served_flags:
        # The remote bases through the test bed's servers; the release archive from the local directory instead of
        # the file server.
        pairs = [served_flags[i + 1] for i in range(0, len(served_flags), 2)]
        flags = [a for pair in pairs if not pair.startswith(f"{ARCHIVES}=") for a in ("--mirror", pair)]
        init = kfctl(
            "init", str(app), "--upstream", RELEASE, *flags, "--mirror", f"{ARCHIVES}={local}/", kubeconfig=kubeconfig
        )
        assert init.code == 0, init.explain()
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    out = json.loads(init.stdout)
    assert (out["release"], out["uri"]) == (RELEASE, f"{ARCHIVES}{RELEASE}.tar.gz")
    kfdef = yaml.safe_load((app / "kfdef.yaml").read_text(encoding="utf-8"))
    paths = [f"../{a['kustomizeConfig']['repoRef']['path']}" for a in kfdef["spec"]["applications"]]
    assert paths == upstream_example_lines()

    print(f"\n{len(paths)} applications of upstream {RELEASE}'s example")
    print("webhooks the stand-in plays (their servers cannot be built here):", *played_webhooks(), sep="\n  ")
    run = kfctl("apply", str(app), "--wait-timeout", "10m", kubeconfig=kubeconfig, timeout=1500)
    assert run.code == 0, run.explain()
    s = run.summary
    print(f"apply: {s['objects']} objects, {s['seconds']} s")
    assert [a["name"] for a in s["applications"]] == out["applications"]
    assert all(a["state"] == "ready" for a in s["applications"]), s["applications"]
    assert not_available(kubeconfig) == []

    namespaces = {o.split("/", 1)[1] for o in labelled(kubeconfig, NAME) if o.startswith("namespace/")}
    gone = kfctl("delete", str(app), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert gone.code == 0, gone.explain()
    assert labelled(kubeconfig, NAME) == []
    left = set(kubectl(kubeconfig, "get", "namespaces", "-o", "name").split())
    assert not {f"namespace/{n}" for n in namespaces} & left, sorted(left)
    assert not_our_kubeconfig(kubeconfig)
