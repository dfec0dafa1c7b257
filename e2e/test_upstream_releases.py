"""Upstream kubeflow/manifests releases, as platform teams use them, on a fresh cluster with the real operators.

A KfDef points at the release tarball (../shared/fixtures, see its README) and five applications:
cert-manager, the training operator, katib (dependsOn both), the notebook controller and KServe. Each test
starts a cluster of its own (the trees own cluster-wide names: `kubeflow`, `cert-manager`, their CRDs and
webhooks) whose process runtime runs the operator release each image names: training-operator, katib-controller
and kserve-controller-manager are the real binaries of each release (e2e/build-binaries --operators), except
katib v0.18.0 (v1.10.0's), which the Go module proxy refuses to serve: v0.19.0 stands in for it, as
kfctl_testbed.runtime says. cert-manager is the stand-in's (e2e/README.md). Without ../shared/fixtures the tests
skip, naming the path.

The oracles are independent of kfctl: what the trees render (`kubectl kustomize` of the release's own
directories), the operators' own behaviour (a TFJob runs to Succeeded, through the operator's webhook), and the
API server's view of what is left (every listable kind, by kfctl's label).
"""

from __future__ import annotations

import copy
import json
import os
import tarfile
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import REPO, kfctl, kubectl, released
from harness import Cluster, poll, run_cluster
from kfctl_testbed import kube_rest
from kfctl_testbed import poll as polling
from runtime_support import TFJOBS, condition, create_tfjob, tfjob

from kfctl import yamlio
from kfctl.health.webhook import REVISION_ANNOTATION, previous_rollout_pods

pytestmark = pytest.mark.e2e

FIXTURES = REPO.parent / "shared" / "fixtures"
NAME = "upstream"  # the KfDef's name: kfctl labels what it applies kfctl.kubeflow.org/app=upstream


@dataclass(frozen=True)
class Release:
    version: str
    sha256: str
    apps_dir: str  # v1.10.0 keeps applications under apps/, v1.11.0 under applications/
    # Operator Deployment → the binary the runtime must run for the image this release names.
    binaries: dict[str, str]

    @property
    def tarball(self) -> Path:
        return FIXTURES / f"kubeflow-manifests-{self.version}.tar.gz"

    def applications(self) -> list[tuple[str, str, list[str]]]:
        a = self.apps_dir
        return [
            ("cert-manager", "common/cert-manager/base", []),
            ("training-operator", f"{a}/training-operator/upstream/overlays/kubeflow", []),
            ("katib", f"{a}/katib/upstream/installs/katib-standalone", ["cert-manager", "training-operator"]),
            ("notebook-controller", f"{a}/jupyter/notebook-controller/upstream/overlays/standalone", []),
            ("kserve", f"{a}/kserve/kserve", []),
        ]


V1_10 = Release(
    "v1.10.0",
    "1ebe81a4715a9942db2f74424a336f6bac3301be726f3755cadfbb0e5801e24e",
    "apps",
    {
        "training-operator": "training-operator-v1.9.1",
        # STAND-IN, named in kfctl_testbed.runtime: katib v0.18.0 cannot be built here (the Go module proxy refuses
        # it), so v0.19.0 runs for its image; the upgrade then changes katib's image but not its binary.
        "katib-controller": "katib-controller",
        "kserve-controller-manager": "kserve-manager-v0.14.1",
        "notebook-controller-deployment": "notebook-controller-v1.10.0",  # built from ../shared/fixtures' source
    },
)
V1_11 = Release(
    "v1.11.0",
    "78af6b2a9578db248c3c4b52d75dafc640a2ed5c8ae9a43d5399a3e9b3704d08",
    "applications",
    {
        "training-operator": "training-operator",  # v1.9.2, the catalog's too
        "katib-controller": "katib-controller",  # v0.19.0, the catalog's too
        "kserve-controller-manager": "kserve-manager-v0.15.2",
        "notebook-controller-deployment": "notebook-controller-v1.10.0",  # both releases pin v1.10.0
    },
)


def release(r: Release) -> Release:
    if not r.tarball.is_file():
        pytest.skip(f"{r.tarball} is not there (see ../shared/fixtures/README.md)")
    return r


def write_kfdef(app_dir: Path, r: Release) -> Path:
    """The KfDef a platform team writes for release `r`; an upgrade rewrites it in place."""
    apps = []
    for name, path, deps in r.applications():
        app: dict[str, Any] = {"name": name}
        if deps:
            app["dependsOn"] = deps
        app["kustomizeConfig"] = {"repoRef": {"name": "manifests", "path": path}}
        apps.append(app)
    kfdef = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"name": NAME, "namespace": "kubeflow"},
        "spec": {
            "platform": "generic",
            "repos": [{"name": "manifests", "uri": f"file://{r.tarball}", "sha256": r.sha256}],
            "applications": apps,
        },
    }
    app_dir.mkdir(parents=True, exist_ok=True)
    path = app_dir / "kfdef.yaml"
    path.write_text(yaml.safe_dump(kfdef, sort_keys=False), encoding="utf-8")
    return path


# --- independent oracles ---------------------------------------------------------------------------------


_RENDERS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}


def upstream_render(r: Release, scratch: Path, kubeconfig: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Application → object id → object, from `kubectl kustomize` of the release's own directories. Once per release
    and worker: a release's render costs about a CPU-minute, and the same tree renders the same objects."""
    if r.version not in _RENDERS:
        _RENDERS[r.version] = _kustomize_each_application(r, scratch, kubeconfig)
    return copy.deepcopy(_RENDERS[r.version])


def _kustomize_each_application(r: Release, scratch: Path, kubeconfig: str) -> dict[str, dict[str, dict[str, Any]]]:
    src = scratch / f"src-{r.version}"
    if not src.exists():
        with tarfile.open(r.tarball) as tar:
            tar.extractall(src, filter="data")
    root = src / f"manifests-{r.version.lstrip('v')}"
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, path, _ in r.applications():
        objs = [o for o in yamlio.safe_load_all(kubectl(kubeconfig, "kustomize", str(root / path))) if o]
        out[name] = {object_id(o): o for o in objs}
    return out


def object_id(obj: dict[str, Any]) -> str:
    """kfctl's way of naming an object: `Kind[.group] [namespace/]name`."""
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    kind = f"{obj['kind']}.{group}" if group else obj["kind"]
    ns = obj["metadata"].get("namespace")
    return f"{kind} {ns + '/' if ns else ''}{obj['metadata']['name']}"


def labelled_objects(kubeconfig: str) -> list[str]:
    """Every object of every listable kind the API server holds with kfctl's label for this install."""
    kinds = kubectl(kubeconfig, "api-resources", "--verbs=list", "-o", "name").split()
    text = kubectl(kubeconfig, "get", ",".join(kinds), "-A", "-l", f"kfctl.kubeflow.org/app={NAME}", "-o", "name")
    return sorted(line for line in text.splitlines() if line)


def operator_binaries(state_dir: Path) -> dict[str, str]:
    """Operator Deployment → the file name of the binary the runtime runs for its pod now (/proc/<pid>/exe)."""
    status = run_cluster("status", "--state-dir", str(state_dir))
    out: dict[str, str] = {}
    listing = status.stdout.split("pods running real binaries", 1)[-1].splitlines()[1:]
    for line in listing:
        parts = line.split()
        if len(parts) < 4 or parts[-2] != "pid":
            continue
        pod = parts[0].split("/", 1)[1]
        deployment = pod.rsplit("-", 2)[0]  # <deployment>-<replicaset hash>-<pod suffix>
        try:
            out[deployment] = os.path.basename(os.readlink(f"/proc/{parts[-1]}/exe"))
        except FileNotFoundError:
            continue  # it ended since the listing: a pod of the release before, going away
    return out


def runs_the_binaries(state_dir: Path, expected: dict[str, str]) -> None:
    """Until each operator's pod runs the binary of `expected`: right after an upgrade the old release's pod may
    still be listed, ending, beside the new one."""

    def check() -> bool:
        running = operator_binaries(state_dir)
        assert running == expected, f"running {running}"
        return True

    poll(check, timeout=60, what=f"the operators to run {expected}")


def run_tfjob(api: kube_rest.Client, name: str) -> dict[str, Any]:
    """A TFJob through the real operator (its webhook admits it, its controller runs it) to Succeeded."""
    create_tfjob(api, tfjob(name))
    poll(
        lambda: (condition(api.get(f"{TFJOBS}/{name}"), "Succeeded") or {}).get("status") == "True",
        timeout=120,
        what=f"TFJob {name} to succeed",
    )
    job = api.get(f"{TFJOBS}/{name}")
    assert job is not None
    return job


def webhook_server_pods(api: kube_rest.Client, deployment: str, service: str) -> str:
    """The revision of Deployment kubeflow/`deployment`, once the endpoints of Service kubeflow/`service` are all
    pods of its current ReplicaSet and previous_rollout_pods, on the controllers' own objects, finds none older."""
    dep = api.get(f"/apis/apps/v1/namespaces/kubeflow/deployments/{deployment}")
    assert dep is not None
    selector = ",".join(f"{k}={v}" for k, v in sorted(dep["spec"]["selector"]["matchLabels"].items()))
    replica_sets = api.list("/apis/apps/v1/namespaces/kubeflow/replicasets", query={"labelSelector": selector})
    slices = api.list(
        "/apis/discovery.k8s.io/v1/namespaces/kubeflow/endpointslices",
        query={"labelSelector": f"kubernetes.io/service-name={service}"},
    )
    revision = dep["metadata"]["annotations"][REVISION_ANNOTATION]
    (current,) = [
        rs["metadata"]["name"]
        for rs in replica_sets
        if rs["metadata"]["annotations"][REVISION_ANNOTATION] == revision
        and rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]
    ]
    listed = [ep["targetRef"]["name"] for s in slices for ep in s.get("endpoints") or []]
    assert listed and all(name.startswith(f"{current}-") for name in listed), (current, listed)
    assert previous_rollout_pods(dep, replica_sets, slices) == ()
    return str(revision)


def crds(api: kube_rest.Client, names: list[str]) -> dict[str, tuple[str, list[str]]]:
    """CRD name → (uid, status.storedVersions)."""
    out = {}
    for name in names:
        crd = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        assert crd is not None, name
        out[name] = (crd["metadata"]["uid"], crd["status"]["storedVersions"])
    return out


def delete_leaves_only_storage(app: Path, kubeconfig: str) -> None:
    """delete keeps the PVC (and the namespace holding it, and the inventory that records it), released; with
    --delete-storage nothing of the install is left."""
    run = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    # Kept, and released: no longer labelled as the install's, so another install may use the namespace.
    assert labelled_objects(kubeconfig) == [], run.explain()
    assert released(kubeconfig) == ["namespace/kubeflow", "persistentvolumeclaim/katib-mysql"], run.explain()
    run = kfctl("delete", str(app), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert labelled_objects(kubeconfig) == [] and released(kubeconfig) == []


# --- the tests -----------------------------------------------------------------------------------------------


def test_v1_11_five_applications_install_healthy_and_work(fresh_cluster: Cluster, tmp_path: Path) -> None:
    r = release(V1_11)
    kubeconfig = fresh_cluster.kubeconfig
    assert fresh_cluster.state_dir is not None
    app = tmp_path / "platform"
    write_kfdef(app, r)

    plan = kfctl("plan", str(app), kubeconfig=kubeconfig)
    assert plan.code == 0, plan.explain()
    steps = {s["step"]: s for wave in json.loads(plan.stdout)["waves"] for s in wave}
    assert steps["Namespace kubeflow"]["application"] == "katib"
    assert steps["Namespace kubeflow"]["hoisted"]["neededBy"]["step"] == "Deployment.apps kubeflow/training-operator"
    mutator = steps["MutatingWebhookConfiguration.admissionregistration.k8s.io katib.kubeflow.org"]
    assert ("Deployment.apps kubeflow/katib-controller", "admits-its-needs", False) in (
        (d["step"], d["rule"], d["orderOnly"]) for d in mutator["dependsOn"]
    )

    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    rendered = upstream_render(r, tmp_path, kubeconfig)
    assert run.summary["objects"] == len({oid for objs in rendered.values() for oid in objs})
    assert run.summary["created"] + run.summary["unchanged"] == run.summary["objects"]
    runs_the_binaries(fresh_cluster.state_dir, r.binaries)

    with closing(kube_rest.Client(kubeconfig)) as api:
        job = run_tfjob(api, "after-install")
        assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 1
        api.delete(f"{TFJOBS}/after-install")

    delete_leaves_only_storage(app, kubeconfig)


def test_v1_10_upgrades_to_v1_11_in_place_then_deletes_clean(fresh_cluster: Cluster, tmp_path: Path) -> None:
    old, new = release(V1_10), release(V1_11)
    kubeconfig = fresh_cluster.kubeconfig
    assert fresh_cluster.state_dir is not None
    app = tmp_path / "platform"
    write_kfdef(app, old)
    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    runs_the_binaries(fresh_cluster.state_dir, old.binaries)

    with closing(kube_rest.Client(kubeconfig)) as api:
        before_job = run_tfjob(api, "before-upgrade")
        crd_names = sorted(
            o["metadata"]["name"]
            for objs in upstream_render(old, tmp_path, kubeconfig).values()
            for o in objs.values()
            if o["kind"] == "CustomResourceDefinition"
        )
        crds_before = crds(api, crd_names)
        pvc_before = api.get("/api/v1/namespaces/kubeflow/persistentvolumeclaims/katib-mysql")
        assert pvc_before is not None
        kserve_before = webhook_server_pods(api, "kserve-controller-manager", "kserve-webhook-server-service")

    # The upgrade: the same KfDef, pointed at the new release and its paths.
    write_kfdef(app, new)
    diff = kfctl("diff", str(app), kubeconfig=kubeconfig)
    assert diff.code == 0, diff.explain()
    report = json.loads(diff.stdout)
    old_render, new_render = upstream_render(old, tmp_path, kubeconfig), upstream_render(new, tmp_path, kubeconfig)
    for name, _, _ in new.applications():
        added = sorted(set(new_render[name]) - set(old_render[name]))
        removed = sorted(set(old_render[name]) - set(new_render[name]))
        assert report["summary"][name]["create"] == len(added), (name, added, report["summary"][name])
        assert report["summary"][name]["prune"] == len(removed), (name, removed, report["summary"][name])
        assert report["summary"][name]["recreate"] == 0, name
        changes = {c["object"]: c["action"] for c in report["changes"] if c["application"] == name}
        assert {o: a for o, a in changes.items() if a in ("create", "prune")} == {
            **dict.fromkeys(added, "create"),
            **dict.fromkeys(removed, "prune"),
        }
    assert sum(s["update"] for s in report["summary"].values()) > 0  # new images at least

    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    total = report["summary"]
    assert run.summary["created"] == sum(s["create"] for s in total.values())
    assert run.summary["pruned"] == sum(s["prune"] for s in total.values())
    # What diff said would change is what apply changed, object for object.
    updated = {c["object"] for c in report["changes"] if c["action"] == "update"}
    written = {e["subject"] for e in run.events if e["event"] in ("Configured", "Corrected")}
    assert updated == written, (sorted(updated - written), sorted(written - updated))
    runs_the_binaries(fresh_cluster.state_dir, new.binaries)
    status = kfctl("status", str(app), kubeconfig=kubeconfig)
    assert status.code == 0, status.explain()
    # KServe's webhook rules differ between the two (v0.15.2 validates a serving runtime's workerSpec, v0.14.1 does
    # not): what it admits waited for the rollout of its server (issue 51 row 20), so when apply ends its Service
    # lists only pods of the Deployment's current ReplicaSet, as the controllers themselves record it.
    configured = {e["subject"]: i for i, e in enumerate(run.events) if e["event"] in ("Configured", "Created")}
    backend = next(
        i
        for i, e in enumerate(run.events)
        if e["event"] == "Healthy" and e["subject"] == "webhook backend kubeflow/kserve-webhook-server-service"
    )
    assert configured["Deployment.apps kubeflow/kserve-controller-manager"] < backend
    assert backend < min(i for sid, i in configured.items() if sid.startswith("ClusterServingRuntime."))
    with closing(kube_rest.Client(kubeconfig)) as api:
        kserve_after = webhook_server_pods(api, "kserve-controller-manager", "kserve-webhook-server-service")
        assert int(kserve_after) > int(kserve_before)  # it rolled out

    with closing(kube_rest.Client(kubeconfig)) as api:
        # CRDs were updated in place: same objects, stored versions kept, custom resources still there.
        after = crds(api, crd_names)
        for name, (uid, stored) in crds_before.items():
            assert after[name][0] == uid, name
            assert set(stored) <= set(after[name][1]), name
        job = api.get(f"{TFJOBS}/before-upgrade")
        assert job is not None and job["metadata"]["uid"] == before_job["metadata"]["uid"]
        pvc = api.get("/api/v1/namespaces/kubeflow/persistentvolumeclaims/katib-mysql")
        assert pvc is not None and pvc["metadata"]["uid"] == pvc_before["metadata"]["uid"]
        # The new operator release works.
        run_tfjob(api, "after-upgrade")
        for name in ("before-upgrade", "after-upgrade"):
            api.delete(f"{TFJOBS}/{name}")
        # Best effort: whatever is left is the next step's to find.
        with suppress(polling.PollTimeout):
            polling.poll(lambda: not api.list(TFJOBS), timeout=60, what="the TFJobs gone", interval=1)

    delete_leaves_only_storage(app, kubeconfig)
