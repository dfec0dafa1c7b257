"""kfctl apply end to end on a real API server: the whole kind platform, re-apply, prune, diff, delete.

The tests in this module run in order and share one app directory and one cluster: each step starts
from the state the previous one left, as a user's session would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from apply_support import CertManagerWebhookCA, kfctl, kubectl, released

from kfctl import yamlio

pytestmark = pytest.mark.e2e

NAME = "e2e-platform"
BUILTIN = (
    "",
    "apps",
    "batch",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "admissionregistration.k8s.io",
    "policy",
    "networking.k8s.io",
    "storage.k8s.io",
    "scheduling.k8s.io",
    "autoscaling",
    "coordination.k8s.io",
    "discovery.k8s.io",
)
FIGURES: dict[str, object] = {}
# Generated at the first apply and kept, like the PVCs whose data they open, until delete --delete-storage.
GENERATED_SECRETS = ("mysql-secret", "mlpipeline-minio-artifact", "katib-mysql-secrets")


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory, kubeconfig: str) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("platform") / "demo"
    run = kfctl("init", str(d), "--platform", "kind", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    text = (d / "kfdef.yaml").read_text().replace("name: demo ", f"name: {NAME} ", 1)
    (d / "kfdef.yaml").write_text(text)
    with CertManagerWebhookCA(kubeconfig):
        yield d
    print("\nFIGURES " + json.dumps(FIGURES, sort_keys=True))


def rendered(app_dir: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for f in sorted((app_dir / "rendered").glob("*.yaml")):
        out += [o for o in yamlio.safe_load_all(f.read_text()) if o]
    return out


def subject(o: dict[str, object]) -> str:
    api = str(o["apiVersion"])
    group = api.split("/")[0] if "/" in api else ""
    meta = o["metadata"]
    assert isinstance(meta, dict)
    kind = f"{o['kind']}.{group}" if group else str(o["kind"])
    return f"{kind} {meta['namespace'] + '/' if meta.get('namespace') else ''}{meta['name']}"


def test_fresh_apply_installs_every_component_healthy_in_one_pass(app_dir: Path, kubeconfig: str) -> None:
    run = kfctl("apply", str(app_dir), "--wait-timeout", "4m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert run.summary["ok"] and not [e for e in run.events if e["event"] in ("Failed", "Blocked", "Skipped")]
    FIGURES["fresh"] = {
        "seconds": run.summary["seconds"],
        "objects": run.summary["objects"],
        "created": run.summary["created"],
        "requests": run.summary["requests"],
    }
    objects = rendered(app_dir)
    # What the files hold, plus the Secrets kfctl generates in the cluster (no file holds them: issue 18).
    generated = [f"Secret kubeflow/{n}" for n in GENERATED_SECRETS]
    assert not [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] in GENERATED_SECRETS]
    assert run.summary["objects"] == len(objects) + len(generated)
    assert all(run.first("Created", s) for s in generated)

    # No custom resource before its CRD was Established.
    crds = {}
    for o in objects:
        if o["kind"] == "CustomResourceDefinition":
            spec = o["spec"]
            assert isinstance(spec, dict)
            crds[(spec["group"], spec["names"]["kind"])] = subject(o)
    custom = [o for o in objects if str(o["apiVersion"]).split("/")[0] not in BUILTIN and "/" in str(o["apiVersion"])]
    assert custom, "the platform has custom resources (Issuers, Certificates, ClusterServingRuntimes)"
    for o in custom:
        gk = (str(o["apiVersion"]).split("/")[0], o["kind"])
        if gk in crds:
            assert run.first("Healthy", crds[gk]) < run.first("Created", subject(o)), subject(o)

    # ClusterServingRuntimes only after KServe's webhook backend was ready.
    kserve_backend = run.first("Healthy", "webhook backend kubeflow/kserve-webhook-server-service")
    runtimes = [subject(o) for o in objects if o["kind"] == "ClusterServingRuntime"]
    assert runtimes
    assert all(kserve_backend < run.first("Created", r) for r in runtimes)

    # cert-manager Issuers and Certificates only after cert-manager's webhook backend was ready.
    cm_backend = run.first("Healthy", "webhook backend cert-manager/cert-manager-webhook")
    issued = [subject(o) for o in objects if o["kind"] in ("Issuer", "ClusterIssuer", "Certificate")]
    assert issued
    assert all(cm_backend < run.first("Created", s) for s in issued)

    # Katib once the API the training operator serves is there (its CRDs Established): katib dependsOn it.
    operator_api = [
        e["ts"]
        for e in run.events
        if e.get("app") == "training-operator"
        and e["event"] == "Healthy"
        and e["subject"].startswith("CustomResourceDefinition.")
    ]
    katib = [e["ts"] for e in run.events if e.get("app") == "katib" and e["event"] == "Created"]
    assert operator_api and katib and max(operator_api) < min(katib)

    status = kfctl("status", str(app_dir), kubeconfig=kubeconfig)
    assert status.code == 0, status.explain()


def test_second_apply_changes_nothing_and_writes_nothing(app_dir: Path, kubeconfig: str) -> None:
    run = kfctl("apply", str(app_dir), "--detailed-exitcode", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()  # --detailed-exitcode: 0 nothing changed, 15 something did
    assert run.summary["requests"]["writes"] == 0
    assert run.summary["created"] == run.summary["configured"] == run.summary["pruned"] == 0
    assert run.summary["unchanged"] == run.summary["objects"]
    FIGURES["reapply"] = {"seconds": run.summary["seconds"], "requests": run.summary["requests"]}

    diff = kfctl("diff", str(app_dir), "--detailed-exitcode", kubeconfig=kubeconfig)
    assert diff.code == 0, diff.explain()


def test_diff_shows_drift_with_secrets_masked(app_dir: Path, kubeconfig: str) -> None:
    kubectl(
        kubeconfig,
        "-n",
        "kubeflow",
        "patch",
        "configmap",
        "katib-config",
        "--type",
        "merge",
        "-p",
        '{"data": {"katib-config.yaml": "drifted"}}',
    )
    diff = kfctl("diff", str(app_dir), kubeconfig=kubeconfig)
    assert diff.code == 0, diff.explain()
    changes = json.loads(diff.stdout)["changes"]
    assert [c["object"] for c in changes] == ["ConfigMap kubeflow/katib-config"]
    assert changes[0]["patch"][0]["path"] == "/data/katib-config.yaml"


def test_removing_a_component_prunes_its_objects_but_keeps_crds_and_other_owners_objects(
    app_dir: Path, kubeconfig: str
) -> None:
    kubectl(kubeconfig, "-n", "kubeflow", "create", "configmap", "users-own", "--from-literal=a=b")
    kubectl(kubeconfig, "-n", "kubeflow", "create", "configmap", "other-apps", "--from-literal=a=b")
    kubectl(
        kubeconfig,
        "-n",
        "kubeflow",
        "label",
        "configmap",
        "other-apps",
        "applyset.kubernetes.io/part-of=applyset-someone-else-v1",
        "kfctl.kubeflow.org/app=other",
    )
    kfdef = app_dir / "kfdef.yaml"
    text = kfdef.read_text()
    start = text.index("    - name: kserve")
    end = text.index("    - name: ", start + 10)
    kfdef.write_text(text[:start] + text[end:])

    run = kfctl("apply", str(app_dir), kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    pruned = {e["subject"] for e in run.events if e["event"] == "Pruned"}
    kept = {e["subject"] for e in run.events if e["event"] == "Kept"}
    assert "Deployment.apps kubeflow/kserve-controller-manager" in pruned
    assert "ClusterServingRuntime.serving.kserve.io kserve-sklearnserver" in pruned
    assert "CustomResourceDefinition.apiextensions.k8s.io inferenceservices.serving.kserve.io" in kept
    FIGURES["prune"] = {"pruned": len(pruned), "kept": len(kept), "seconds": run.summary["seconds"]}
    assert not kubectl(
        kubeconfig,
        "-n",
        "kubeflow",
        "get",
        "deployment",
        "kserve-controller-manager",
        "--ignore-not-found",
        "-o",
        "name",
    )
    assert kubectl(kubeconfig, "get", "crd", "inferenceservices.serving.kserve.io", "-o", "name")
    assert kubectl(kubeconfig, "-n", "kubeflow", "get", "configmap", "users-own", "other-apps", "-o", "name").split()


def test_delete_removes_everything_but_storage_then_storage_with_the_flag(app_dir: Path, kubeconfig: str) -> None:
    run = kfctl("delete", str(app_dir), "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    # What delete keeps it releases: no longer labelled as the install's (another install may use it).
    assert labelled(kubeconfig) == []
    left = released(kubeconfig)
    kept_secrets = tuple(f"secret/{n}" for n in GENERATED_SECRETS)
    assert left and all(
        x.startswith(("persistentvolumeclaim/", "namespace/kubeflow")) or x in kept_secrets for x in left
    )
    assert set(kept_secrets) <= set(left), left
    namespaces = kubectl(kubeconfig, "get", "namespaces", "-o", "name").split()
    assert "namespace/cert-manager" not in namespaces
    FIGURES["delete"] = {
        "deleted": run.summary["deleted"],
        "seconds": run.summary["seconds"],
        "kept": len(run.summary["kept"]),
    }

    # The user's and another app's ConfigMaps (made in the prune test) keep namespace kubeflow: deleting it
    # would delete them. It goes, with them, only when forced.
    run = kfctl("delete", str(app_dir), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert (labelled(kubeconfig), released(kubeconfig)) == ([], ["namespace/kubeflow"])
    kept = " ".join(run.summary["kept"])
    assert "ConfigMap kubeflow/users-own" in kept and "ConfigMap kubeflow/other-apps (kfctl app other)" in kept, kept
    run = kfctl("delete", str(app_dir), "--force-namespaces", "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert (labelled(kubeconfig), released(kubeconfig)) == ([], [])
    assert "namespace/kubeflow" not in kubectl(kubeconfig, "get", "namespaces", "-o", "name").split()


def labelled(kubeconfig: str) -> list[str]:
    kinds = ",".join(
        [
            "namespaces",
            "persistentvolumeclaims",
            "deployments",
            "services",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "customresourcedefinitions",
            "clusterroles",
            "clusterrolebindings",
            "roles",
            "rolebindings",
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
            "statefulsets",
        ]
    )
    out = kubectl(kubeconfig, "get", kinds, "-A", "-l", f"kfctl.kubeflow.org/app={NAME}", "-o", "name", check=False)
    return sorted(
        line.split(".")[0] + "/" + line.split("/", 1)[1] if "." in line.split("/")[0] else line for line in out.split()
    )


def test_delete_refuses_another_cluster_without_force(tmp_path: Path, kubeconfig: str) -> None:
    record = tmp_path / "app" / ".cache" / "cluster.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"clusterId": "some-other-cluster", "server": "https://10.0.0.1", "context": "prod"}))
    kfdef = Path(tmp_path / "app" / "kfdef.yaml")
    kfdef.write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata: {name: x, namespace: default}\n"
        "spec: {platform: generic, applications: []}\n"
    )
    run = kfctl("delete", str(tmp_path / "app"), kubeconfig=kubeconfig)
    assert run.code == 6, run.explain()
    assert run.error["message"].startswith(f"refusing to delete: {tmp_path / 'app'} was applied to another cluster")
