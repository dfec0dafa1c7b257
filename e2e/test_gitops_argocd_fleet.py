"""`kfctl export --format argocd --fleet SELECTOR`: one commit, two clusters, synced by Argo CD's real application
controller and ApplicationSet controller (docs/gitops.md, "A fleet of clusters").

Two clusters of the module's own (`module_cluster`, where Argo CD runs, and `second_module_cluster`; each with
its process runtime running the real operators): Argo CD's application controller, repo-server, ApplicationSet
controller and Redis run as processes against the first (kfctl_testbed.argocd). Both are registered as Argo CD
registers clusters, by cluster Secrets: `in-cluster` (https://kubernetes.default.svc, the controllers' own
cluster) labelled with the fleet's selector, and `b` (the second API server on 127.0.0.1, its kubeconfig's
client certificate) annotated `kfctl.kubeflow.org/notebook-controller.clusterDomain: fleet-b.local` and at first
not labelled. The platform is `kfctl init --platform kind` cut to common and the notebook controller (two waves;
with cert-manager, common and KServe instead, three waves with KServe in two parts, tests 2 and 3 passed, 708 s
to healthy under load 22-36, kept out for time), with the notebook controller's clusterDomain set to
cluster.local in the KfDef; it is generated, exported with `--fleet kubeflow.org/fleet=e2e --fleet-parameter
notebook-controller.clusterDomain --prune`, committed and pushed once, and the export's applicationset.yaml
applied.

1. A cluster without the label gets nothing: once the ApplicationSet has made in-cluster's parent, there is no
   Application for `b` and its API server has no namespace kubeflow. Then `b`'s Secret is labelled.
2. Both parents and all their children are Synced and Healthy at the one commit, each child pointed at its
   cluster; every object kfctl renders exists on both API servers.
3. The per-cluster difference: the notebook controller's ConfigMap and pod template say cluster.local on the first
   cluster (the KfDef's value) and fleet-b.local on `b` (its annotation).
4. Last: `b`'s Secret loses the label. The ApplicationSet deletes b's parent, whose finalizer deletes its
   children, whose finalizers (--prune) delete what they applied on `b` but for what kfctl keeps (Namespaces,
   CRDs); the first cluster's Applications stay Synced and Healthy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops_support import KEPT, live_objects, rendered_keys, run_kfctl
from harness import Cluster, poll
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import kube_rest
from kfctl_testbed.argocd import APPLICATIONS, APPLICATIONSETS, ArgoCD
from kfctl_testbed.flux import Repo

pytestmark = pytest.mark.e2e

NAME = "e2e"  # the KfDef's name, so the ApplicationSet's; parents <cluster>-e2e, children <cluster>-e2e-<part>
APP_PATH = f"clusters/{NAME}"
EXPORT_PATH = f"argocd/{NAME}"
APPS = ("common", "notebook-controller")
SELECTOR = "kubeflow.org/fleet=e2e"
PARAMETER = "notebook-controller.clusterDomain"
KFDEF_DOMAIN, B_DOMAIN = "cluster.local", "fleet-b.local"
CLUSTERS = ("in-cluster", "b")
INSTALL_TIMEOUT = 900.0


@dataclass
class Fleet:
    clusters: dict[str, Cluster]  # Argo CD's cluster name → the cluster
    api: kube_rest.Client  # the first cluster's: Argo CD's objects live there
    argocd: ArgoCD
    app_dir: Path
    repo: Repo
    commit: str
    seconds: float  # from applying the ApplicationSet until every Application of both clusters was Synced, Healthy
    applications: dict[str, dict[str, Any]]
    before_label: list[str]  # the Applications once the ApplicationSet had made in-cluster's parent, b unlabelled
    b_namespaces_before_label: list[str]


def trim_kfdef(app_dir: Path) -> None:
    """The kind platform's KfDef cut to APPS, with the notebook controller's clusterDomain set (a fleet parameter
    must be one the KfDef sets: its value is the default of a cluster without the annotation)."""
    path = app_dir / "kfdef.yaml"
    kfdef = yaml.safe_load(path.read_text())
    apps = [a for a in kfdef["spec"]["applications"] if a["name"] in APPS]
    for app in apps:
        if app["name"] == "notebook-controller":
            app["kustomizeConfig"]["parameters"] = [{"name": "clusterDomain", "value": KFDEF_DOMAIN}]
    kfdef["spec"]["applications"] = apps
    path.write_text(yaml.safe_dump(kfdef, sort_keys=False))


def exported_children(repo: Repo) -> list[str]:
    return sorted(
        yaml.safe_load(p.read_text())["metadata"]["name"] for p in (repo.work / EXPORT_PATH).glob("application-*.yaml")
    )


def names_for(cluster: str, children: list[str]) -> list[str]:
    return [f"{cluster}-{NAME}", *(f"{cluster}-{c}" for c in children)]


def namespaces(kubeconfig: str) -> list[str]:
    out = json.loads(flux_support.kubectl(kubeconfig, "get", "namespaces", "-o", "json"))
    return sorted(n["metadata"]["name"] for n in out["items"])


@pytest.fixture(scope="module")
def fleet(
    module_cluster: Cluster, second_module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    argocd_support.require_argocd()
    root = tmp_path_factory.mktemp("argocd-fleet")
    kubeconfig = module_cluster.kubeconfig
    clusters = dict(zip(CLUSTERS, (module_cluster, second_module_cluster), strict=True))
    with flux_support.served_repo(root) as repo:
        app_dir = repo.work / APP_PATH
        app_dir.parent.mkdir(parents=True)
        run_kfctl("init", str(app_dir), "--platform", "kind")
        trim_kfdef(app_dir)
        run_kfctl("generate", str(app_dir))
        run_kfctl(
            "export", str(app_dir), "--format", "argocd", "--repo-url", repo.url, "--path", APP_PATH, "--prune",
            "--output-dir", str(repo.work / EXPORT_PATH), "--fleet", SELECTOR, "--fleet-parameter", PARAMETER,
        )  # fmt: skip
        commit = repo.commit_and_push("kfctl platform for the fleet", APP_PATH, EXPORT_PATH)
        argocd_support.install(kubeconfig)
        flux_support.kubectl(
            kubeconfig, "apply", "--server-side", "--field-manager=kfctl", "-f",
            str(repo.work / EXPORT_PATH / "argocd-cm.yaml"),
        )  # fmt: skip
        label = dict([SELECTOR.split("=")])
        registered = [
            argocd_support.cluster_secret("in-cluster", kubeconfig=None, labels=label),
            argocd_support.cluster_secret(
                "b",
                kubeconfig=second_module_cluster.kubeconfig,
                annotations={f"kfctl.kubeflow.org/{PARAMETER}": B_DOMAIN},
            ),
        ]
        flux_support.kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(registered))
        api = kube_rest.Client(kubeconfig)
        children = exported_children(repo)
        with argocd_support.run_argocd(kubeconfig, root / "argocd", applicationsets=True) as argocd:
            start = time.monotonic()
            flux_support.kubectl(kubeconfig, "apply", "-f", str(repo.work / EXPORT_PATH / "applicationset.yaml"))
            # 1. b's Secret has no label yet: once the ApplicationSet is up to date, only in-cluster has a parent.
            argocd_support.wait_for(
                lambda: _up_to_date(api) and api.get(f"{APPLICATIONS}/in-cluster-{NAME}") is not None,
                api=api,
                argocd=argocd,
                timeout=120,
                what="the ApplicationSet to make in-cluster's parent",
            )
            before = sorted(a["metadata"]["name"] for a in api.list(APPLICATIONS))
            b_before = namespaces(second_module_cluster.kubeconfig)
            flux_support.kubectl(kubeconfig, "-n", "argocd", "label", "secret", "cluster-b", SELECTOR)
            for name, cluster in clusters.items():
                argocd_support.wait_for(
                    lambda c=cluster: "kubeflow" in namespaces(c.kubeconfig),  # type: ignore[misc]
                    api=api,
                    argocd=argocd,
                    timeout=300,
                    what=f"Argo CD to create namespace kubeflow on {name}",
                )
                run_kfctl("secrets", "apply", str(app_dir), "--kubeconfig", cluster.kubeconfig)
            names = [n for c in CLUSTERS for n in names_for(c, children)]
            found = argocd_support.wait_all(api, names, timeout=INSTALL_TIMEOUT, argocd=argocd, revision=commit)
            seconds = time.monotonic() - start
            print(f"\nArgo CD: both clusters' Applications Synced and Healthy {seconds:.1f} s after the ApplicationSet")
            yield Fleet(clusters, api, argocd, app_dir, repo, commit, seconds, found, before, b_before)
            sockets = argocd.non_loopback_sockets()
            assert set(sockets) <= {argocd_support.ALL_INTERFACES_LISTENER}, sockets
        api.close()


def _up_to_date(api: kube_rest.Client) -> bool:
    appset = api.get(f"{APPLICATIONSETS}/{NAME}") or {}
    conditions = (appset.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "ResourcesUpToDate" and c.get("status") == "True" for c in conditions)


def test_a_cluster_without_the_label_gets_nothing(fleet: Fleet) -> None:
    """Read once the ApplicationSet was up to date with in-cluster's parent made (its children may not be yet)."""
    allowed = set(names_for("in-cluster", exported_children(fleet.repo)))
    assert f"in-cluster-{NAME}" in fleet.before_label and set(fleet.before_label) <= allowed, fleet.before_label
    assert "kubeflow" not in fleet.b_namespaces_before_label


def test_both_clusters_are_synced_and_healthy_from_one_commit_each_child_on_its_cluster(fleet: Fleet) -> None:
    children = exported_children(fleet.repo)
    assert children == [f"{NAME}-{p}" for p in APPS]
    servers = {"in-cluster": "https://kubernetes.default.svc", "b": _server(fleet.clusters["b"].kubeconfig)}
    for cluster, server in servers.items():
        parent = fleet.applications[f"{cluster}-{NAME}"]
        assert parent["metadata"]["ownerReferences"][0]["kind"] == "ApplicationSet"
        for child in children:
            app = fleet.applications[f"{cluster}-{child}"]
            assert app["spec"]["destination"]["server"] == server, (cluster, child)
            assert app["status"]["sync"]["revision"] == fleet.commit
            assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] in ("0", "1")
    rendered = set().union(*(rendered_keys(fleet.app_dir, a) for a in APPS))
    for name, cluster in fleet.clusters.items():
        live = set(live_objects(cluster.kubeconfig, fleet.app_dir / "rendered", missing_ok=True))
        assert live == rendered, f"{name}: missing {sorted(rendered - live)[:10]}"


def test_the_parameter_a_clusters_annotation_names_differs_on_that_cluster_only(fleet: Fleet) -> None:
    domains = {name: _cluster_domains(cluster.kubeconfig) for name, cluster in fleet.clusters.items()}
    print(f"\nthe notebook controller's cluster domain (ConfigMap, pod template): {domains}")
    assert domains == {"in-cluster": (KFDEF_DOMAIN, KFDEF_DOMAIN), "b": (B_DOMAIN, B_DOMAIN)}
    child = f"{NAME}-notebook-controller"
    patches = {c: fleet.applications[f"{c}-{child}"]["spec"]["source"]["kustomize"]["patches"][0] for c in CLUSTERS}
    assert json.loads(patches["b"]["patch"]) == [{"op": "replace", "path": "/data/clusterDomain", "value": B_DOMAIN}]
    # For a cluster without the annotation the parent renders exactly what git holds.
    exported = yaml.safe_load((fleet.repo.work / EXPORT_PATH / f"application-{child}.yaml").read_text())
    assert patches["in-cluster"] == exported["spec"]["source"]["kustomize"]["patches"][0]


def _server(kubeconfig: str) -> str:
    return str(yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]["server"])


def _cluster_domains(kubeconfig: str) -> tuple[str, str]:
    """Where generate's replacements put clusterDomain: the controller's ConfigMap and its pod template."""
    get = ("-n", "kubeflow", "get", "-o", "json")
    config = json.loads(flux_support.kubectl(kubeconfig, *get, "configmap", "notebook-controller-config"))
    deployment = json.loads(flux_support.kubectl(kubeconfig, *get, "deployment", "notebook-controller-deployment"))
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    return config["data"]["CLUSTER_DOMAIN"], annotations["kfctl.kubeflow.org/cluster-domain"]


def test_a_cluster_whose_label_is_removed_loses_the_platform_but_what_kfctl_keeps(fleet: Fleet) -> None:
    kubeconfig = fleet.clusters["in-cluster"].kubeconfig
    label = SELECTOR.split("=")[0]
    flux_support.kubectl(kubeconfig, "-n", "argocd", "label", "secret", "cluster-b", f"{label}-")
    argocd_support.wait_for(
        lambda: not [a for a in fleet.api.list(APPLICATIONS) if a["metadata"]["name"].startswith("b-")],
        api=fleet.api,
        argocd=fleet.argocd,
        timeout=300,
        what="Argo CD to delete b's parent and children",
    )
    rendered = set().union(*(rendered_keys(fleet.app_dir, a) for a in APPS))
    kept = {k for k in rendered if (k[0], k[1]) in KEPT}
    assert kept and any(k[1] == "CustomResourceDefinition" for k in kept), kept
    b = fleet.clusters["b"].kubeconfig
    poll(
        lambda: set(live_objects(b, fleet.app_dir / "rendered", missing_ok=True)) == kept,
        timeout=120,
        what="b's objects deleted but the Namespaces and CRDs kfctl keeps",
    )
    names = names_for("in-cluster", exported_children(fleet.repo))
    argocd_support.wait_all(fleet.api, names, timeout=120, argocd=fleet.argocd, revision=fleet.commit)
    assert set(live_objects(kubeconfig, fleet.app_dir / "rendered", missing_ok=True)) == rendered
