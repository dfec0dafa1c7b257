"""Issue 18 on real clusters: no shared default credentials.

Pipelines and Katib (with what they need) on a fresh cluster: the first apply creates mysql-secret,
mlpipeline-minio-artifact and katib-mysql-secrets with random values, before the workloads that read them,
which reference them; neither the app directory nor `kfctl export` holds a value; re-apply, diff, an upgrade
and a reinstall after a delete that kept the volumes keep every value; delete keeps
each Secret beside the PVC it protects, `--delete-storage` removes both. A second fresh cluster, filled the
GitOps way (`kfctl secrets apply`, then apply), gets other values, and uses a Secret the KfDef brings.

The tests run in order on one module cluster and share the app directory, as a user's session would.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import CertManagerWebhookCA, kfctl, kubectl, released
from harness import Cluster

pytestmark = pytest.mark.e2e

NAME = "e2e-gensecrets"
GENERATED = {
    "mysql-secret": {"username": 0, "password": 32},  # 0: a fixed key (root), not drawn
    "mlpipeline-minio-artifact": {"accesskey": 20, "secretkey": 40},
    "katib-mysql-secrets": {"MYSQL_ROOT_PASSWORD": 32},
}
PROTECTS = {
    "mysql-secret": "mysql-pv-claim",
    "mlpipeline-minio-artifact": "seaweedfs-pvc",
    "katib-mysql-secrets": "katib-mysql",
}
STATE: dict[str, Any] = {}  # what the first cluster holds, for the later tests
FIGURES: dict[str, Any] = {}


def secret(kubeconfig: str, name: str) -> dict[str, Any] | None:
    out = kubectl(kubeconfig, "-n", "kubeflow", "get", "secret", name, "-o", "json", "--ignore-not-found")
    return json.loads(out) if out.strip() else None


def decoded(live: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (live.get("data") or {}).items()}


def generated_now(kubeconfig: str) -> dict[str, tuple[dict[str, str], str]]:
    """name → (values, resourceVersion) of each generated Secret; fails when one is missing."""
    out = {}
    for name in GENERATED:
        live = secret(kubeconfig, name)
        assert live is not None, f"Secret kubeflow/{name} does not exist"
        out[name] = (decoded(live), live["metadata"]["resourceVersion"])
    return out


def secret_values(generated: dict[str, tuple[dict[str, str], str]]) -> dict[str, dict[str, str]]:
    return {name: keys for name, (keys, _) in generated.items()}


def secret_values_now(kubeconfig: str) -> dict[str, dict[str, str]]:
    return secret_values(generated_now(kubeconfig))


def secret_strings(values: dict[str, dict[str, str]]) -> list[str]:
    """Every form a drawn value could leak in: as is, base64 (padded or not), JSON-escaped."""
    out = []
    for name, keys in values.items():
        for key, value in keys.items():
            if GENERATED.get(name, {}).get(key, 1) == 0:
                continue  # the fixed user name "root" is no secret
            b64 = base64.b64encode(value.encode()).decode()
            out += [value, b64, b64.rstrip("="), json.dumps(value)[1:-1]]
    return out


def leaked(strings: list[str], *texts: str) -> list[str]:
    return [s for s in strings if any(s in t for t in texts)]


def files_holding(directory: Path, strings: list[str]) -> list[str]:
    """grep -r: the files under ``directory`` that hold any of ``strings``."""
    hits = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits += [f"{path.relative_to(directory)}: {s[:4]}…" for s in strings if s.encode() in data]
    return hits


def pod_secret_refs(kubeconfig: str, selector: str) -> set[str]:
    """The Secrets the live pods of ``selector`` read through env (secretKeyRef) or envFrom."""
    pods = json.loads(kubectl(kubeconfig, "-n", "kubeflow", "get", "pods", "-l", selector, "-o", "json"))["items"]
    assert pods, f"no pod matches {selector}"
    refs = set()
    for pod in pods:
        for c in pod["spec"]["containers"]:
            refs |= {
                e["valueFrom"]["secretKeyRef"]["name"]
                for e in c.get("env") or []
                if "secretKeyRef" in (e.get("valueFrom") or {})
            }
            refs |= {e["secretRef"]["name"] for e in c.get("envFrom") or [] if "secretRef" in e}
    return refs


def set_parameter(app: Path, application: str, name: str, value: str) -> None:
    path = app / "kfdef.yaml"
    doc = yaml.safe_load(path.read_text())
    entry = next(a for a in doc["spec"]["applications"] if a["name"] == application)
    params = entry.setdefault("kustomizeConfig", {}).setdefault("parameters", [])
    params[:] = [p for p in params if p["name"] != name] + [{"name": name, "value": value}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory, module_cluster: Cluster) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("gensecrets") / "demo"
    run = kfctl(
        "init", str(d), "--platform", "kind", "--components", "pipelines,katib", kubeconfig=module_cluster.kubeconfig
    )
    assert run.code == 0, run.explain()
    (d / "kfdef.yaml").write_text(
        re.sub(r"(?m)^(  name: )demo\b", rf"\g<1>{NAME}", (d / "kfdef.yaml").read_text(), count=1)
    )
    with CertManagerWebhookCA(module_cluster.kubeconfig):
        yield d
    print("\nFIGURES " + json.dumps(FIGURES, sort_keys=True))


def test_first_apply_generates_each_secret_before_the_workloads_that_read_it(
    app_dir: Path, module_cluster: Cluster
) -> None:
    kc = module_cluster.kubeconfig
    run = kfctl("apply", str(app_dir), "--wait-timeout", "6m", kubeconfig=kc)
    assert run.code == 0, run.explain()
    now = generated_now(kc)
    for name, keys in GENERATED.items():
        values, _ = now[name]
        assert sorted(values) == sorted(keys), name
        for key, length in keys.items():
            if length:
                assert len(values[key]) == length and values[key].isalnum(), f"{name}.{key}"
        live = secret(kc, name)
        assert live is not None
        assert live["metadata"]["labels"]["kfctl.kubeflow.org/app"] == NAME
        assert live["metadata"]["annotations"]["kfctl.kubeflow.org/protects-claim"] == PROTECTS[name]
    assert now["mysql-secret"][0]["username"] == "root"
    # Created before the workloads that read them (the planner's pod-reference edge), each reported by its keys.
    for name, workloads in {
        "mysql-secret": ["mysql", "ml-pipeline", "cache-server", "metadata-grpc-deployment"],
        "mlpipeline-minio-artifact": ["seaweedfs", "ml-pipeline", "ml-pipeline-ui"],
        "katib-mysql-secrets": ["katib-mysql", "katib-db-manager"],
    }.items():
        for w in workloads:
            deploy = f"Deployment.apps kubeflow/{w}"
            if any(e["subject"] == deploy and e["event"] == "Created" for e in run.events):
                assert run.first("Created", f"Secret kubeflow/{name}") < run.first("Created", deploy), (name, w)
    assert sorted(e["subject"] for e in run.events if e["event"] == "Generated") == sorted(
        f"Secret kubeflow/{n}" for n in GENERATED
    )
    strings = secret_strings({n: v for n, (v, _) in now.items()})
    assert leaked(strings, run.stdout, run.stderr) == []
    # The pipelines API server and its database read the generated Secret.
    assert "mysql-secret" in pod_secret_refs(kc, "app=ml-pipeline")
    assert "mysql-secret" in pod_secret_refs(kc, "app=mysql")
    assert "mlpipeline-minio-artifact" in pod_secret_refs(kc, "app=ml-pipeline")
    assert pod_secret_refs(kc, "app=seaweedfs") == {"mlpipeline-minio-artifact"}
    STATE["first"] = now
    STATE["strings"] = strings
    FIGURES["first apply"] = {k: run.summary[k] for k in ("objects", "created", "seconds", "requests")}


def test_neither_the_app_directory_nor_the_export_holds_a_credential(
    app_dir: Path, module_cluster: Cluster, tmp_path: Path
) -> None:
    strings = STATE["strings"]
    placeholders = ["change-me", "kfp-default-access-key"]
    assert files_holding(app_dir, strings + placeholders) == []
    for fmt in ("argocd", "flux"):
        out = tmp_path / fmt
        run = kfctl(
            "export",
            str(app_dir),
            "--format",
            fmt,
            "--repo-url",
            "https://git.example.com/p.git",
            "--output-dir",
            str(out),
            kubeconfig=module_cluster.kubeconfig,
        )
        assert run.code == 0, run.explain()
        assert files_holding(out, strings + placeholders) == [] and leaked(strings, run.stdout, run.stderr) == []
        assert not any("kind: Secret" in p.read_text() for p in out.rglob("*.yaml"))


def test_reapply_diff_and_status_keep_every_value_and_show_keys_only(app_dir: Path, module_cluster: Cluster) -> None:
    kc = module_cluster.kubeconfig
    run = kfctl("apply", str(app_dir), "--detailed-exitcode", kubeconfig=kc)
    assert run.code == 0, run.explain()
    assert run.summary["requests"]["writes"] == 0
    FIGURES["re-apply"] = {k: run.summary[k] for k in ("unchanged", "seconds", "requests")}
    assert generated_now(kc) == STATE["first"]  # values and resourceVersions
    diff = kfctl("diff", str(app_dir), "--detailed-exitcode", kubeconfig=kc)
    assert diff.code == 0, diff.explain()
    status = kfctl("status", str(app_dir), kubeconfig=kc)
    assert status.code == 0, status.explain()
    report = json.loads(status.stdout)
    assert {s["name"]: (s["source"], s["state"], s["keys"]) for s in report["secrets"]} == {
        "mysql-secret": ("generated", "present", {"username": "present", "password": "generated"}),
        "mlpipeline-minio-artifact": ("generated", "present", {"accesskey": "generated", "secretkey": "generated"}),
        "katib-mysql-secrets": ("generated", "present", {"MYSQL_ROOT_PASSWORD": "generated"}),
    }
    assert leaked(STATE["strings"], run.stdout, run.stderr, diff.stdout, status.stdout, status.stderr) == []


def test_an_upgrade_keeps_every_value(app_dir: Path, module_cluster: Cluster) -> None:
    """A new release of a component's images (here the KFP driver the API server hands out): the API server's
    Deployment changes, the Secrets do not."""
    kc = module_cluster.kubeconfig
    set_parameter(app_dir, "pipelines", "kfpDriverImage", "ghcr.io/kubeflow/kfp-driver:2.16.1")
    run = kfctl("apply", str(app_dir), "--wait-timeout", "6m", kubeconfig=kc)
    assert run.code == 0, run.explain()
    assert "Deployment.apps kubeflow/ml-pipeline" in [e["subject"] for e in run.events if e["event"] == "Configured"]
    assert generated_now(kc) == STATE["first"]
    assert "mysql-secret" in pod_secret_refs(kc, "app=ml-pipeline")


def test_delete_keeps_each_secret_beside_its_volume_and_a_reinstall_reuses_it(
    app_dir: Path, module_cluster: Cluster
) -> None:
    kc = module_cluster.kubeconfig
    run = kfctl("delete", str(app_dir), "--wait-timeout", "3m", kubeconfig=kc)
    assert run.code == 0, run.explain()
    for name, claim in PROTECTS.items():
        why = f"holds the credentials of the data in PersistentVolumeClaim kubeflow/{claim}, which is kept"
        assert f"Secret kubeflow/{name}: {why}; kept without --delete-storage" in run.summary["kept"]
        assert kubectl(kc, "-n", "kubeflow", "get", "pvc", claim, "-o", "name").strip()
    # Kept with every value, and released (their ownership labels removed: one write each).
    assert secret_values_now(kc) == secret_values(STATE["first"])
    assert {f"secret/{n}" for n in PROTECTS} <= set(released(kc))
    again = kfctl("apply", str(app_dir), "--wait-timeout", "6m", kubeconfig=kc)
    assert again.code == 0, again.explain()
    assert secret_values_now(kc) == secret_values(STATE["first"]) and not [
        e for e in again.events if e["event"] == "Generated"
    ]
    gone = kfctl("delete", str(app_dir), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kc)
    assert gone.code == 0, gone.explain()
    assert [n for n in GENERATED if secret(kc, n) is not None] == []
    assert leaked(STATE["strings"], run.stdout, again.stdout, gone.stdout) == []


def test_a_second_cluster_filled_the_gitops_way_gets_other_values_and_a_brought_secret(
    app_dir: Path, fresh_cluster: Cluster, tmp_path: Path
) -> None:
    kc = fresh_cluster.kubeconfig
    app = tmp_path / "demo"
    shutil.copytree(app_dir, app, ignore=shutil.ignore_patterns(".cache"))
    set_parameter(app, "katib", "mysqlSecretRef", "katib-db-byo")
    assert kfctl("generate", str(app), kubeconfig=kc).code == 0
    kubectl(kc, "create", "namespace", "kubeflow")
    missing = kfctl("secrets", "apply", str(app), kubeconfig=kc)
    assert missing.code == 5, missing.explain()
    assert missing.error["details"] == [
        "Secret kubeflow/katib-db-byo (katib parameter mysqlSecretRef) does not exist; "
        "it needs key(s) MYSQL_ROOT_PASSWORD"
    ]
    assert secret(kc, "mysql-secret") is None  # nothing was written
    assert brought_check(app, kc) == (
        14,
        "fail",
        "1 of 1 Secret(s) the KfDef brings are not ready: Secret kubeflow/katib-db-byo (katib parameter "
        "mysqlSecretRef) does not exist; it needs key(s) MYSQL_ROOT_PASSWORD",
    )
    kubectl(
        kc,
        "-n",
        "kubeflow",
        "create",
        "secret",
        "generic",
        "katib-db-byo",
        "--from-literal=MYSQL_ROOT_PASSWORD=brought-by-the-team",
    )
    assert brought_check(app, kc) == (
        0,
        "pass",
        "the 1 Secret(s) the KfDef brings have every key needed: kubeflow/katib-db-byo",
    )
    made = kfctl("secrets", "apply", str(app), kubeconfig=kc)
    assert made.code == 0, made.explain()
    FIGURES["secrets apply"] = {"seconds": round(made.seconds, 2), "requests": json.loads(made.stdout)["requests"]}
    assert [(s["object"], s["result"]) for s in json.loads(made.stdout)["secrets"]] == [
        ("Secret kubeflow/mysql-secret", "created"),
        ("Secret kubeflow/mlpipeline-minio-artifact", "created"),
        ("Secret kubeflow/katib-db-byo", "brought"),
    ]
    before = {n: secret(kc, n) for n in ("mysql-secret", "mlpipeline-minio-artifact")}
    with CertManagerWebhookCA(kc):
        run = kfctl("apply", str(app), "--wait-timeout", "6m", kubeconfig=kc)
    assert run.code == 0, run.explain()
    for name, live in before.items():
        now = secret(kc, name)
        assert live is not None and now is not None
        assert now["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"], name
        first, second = STATE["first"][name][0], decoded(now)
        assert [k for k in second if GENERATED[name][k] and second[k] == first[k]] == [], name
    assert secret(kc, "katib-mysql-secrets") is None
    assert pod_secret_refs(kc, "katib.kubeflow.org/component=mysql") == {"katib-db-byo"}
    assert pod_secret_refs(kc, "katib.kubeflow.org/component=db-manager") == {"katib-db-byo"}


def brought_check(app: Path, kubeconfig: str) -> tuple[int, str, str]:
    """`kfctl check --pre --only brought-secrets`: its exit code, verdict and message."""
    run = kfctl("check", "--pre", "--skip-generate", "--only", "brought-secrets", str(app), kubeconfig=kubeconfig)
    checks = json.loads(run.stdout)["checks"]
    assert [c["name"] for c in checks] == ["brought-secrets"], run.explain()
    return run.code, checks[0]["verdict"], checks[0]["message"]
