"""Generated Secrets (issue 18): a component declares them, apply creates them with random values at the first
run and never changes a value; delete keeps one while the volume it protects stays; a KfDef may bring its own.

Hermetic: a tiny catalog written here (a namespace and a `db` component with a Deployment, a PVC and one
generated Secret), rendered files written by hand, the fake cluster.
"""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, kfdef_text

from kfctl.app.apply import apply_kfdef
from kfctl.app.bundle import load_bundle
from kfctl.app.delete import delete_kfdef, delete_options
from kfctl.app.diff import diff_kfdef
from kfctl.app.secrets import apply_secrets
from kfctl.app.status import status_of
from kfctl.catalog.load import load_catalog
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.config.model import KfDef
from kfctl.engine import labels
from kfctl.engine.apply import ApplyOptions
from kfctl.engine.events import EventLog
from kfctl.engine.remove import RemoveOptions
from kfctl.errors import ConfigError, PlanError, RenderError
from kfctl.objects import ObjectKey

SECRET = ObjectKey("", "Secret", "kubeflow", "db-secret")
PVC = ObjectKey("", "PersistentVolumeClaim", "kubeflow", "db-data")
KEPT_BESIDE = "holds the credentials of the data in PersistentVolumeClaim kubeflow/db-data, which is kept;"
FAST = ApplyOptions(wait_timeout=5.0, timeout=30.0, poll_interval=0.01)
PRUNE = RemoveOptions(wait_timeout=2.0, poll_interval=0.01)

DB_COMPONENT = """\
name: db
description: A database.
namespace: kubeflow
dependsOn: [common]
platforms: [kind]
parameters:
  - name: dbSecretRef
    type: dns-subdomain
    default: db-secret
    description: An existing Secret to use instead of the generated db-secret.
    targets:
      - select: {kind: Deployment, name: db}
        fieldPaths: ["spec.template.spec.containers.[name=db].env.[name=PASSWORD].valueFrom.secretKeyRef.name"]
secrets:
  - name: db-secret
    description: The database's credentials.
    protects: db-data
    parameter: dbSecretRef
    keys:
      user: {value: admin}
      password: {length: 24, alphabet: alphanumeric}
"""
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: kubeflow}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: db:1
          env:
            - name: PASSWORD
              valueFrom: {secretKeyRef: {name: %s, key: password}}
"""
CLAIM = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: db-data, namespace: kubeflow}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def write_catalog(root: Path, db_component: str = DB_COMPONENT) -> Catalog:
    for name, meta in (
        ("common", "name: common\ndescription: The namespace.\nnamespace: kubeflow\nplatforms: [kind]\n"),
        ("db", db_component),
    ):
        d = root / "manifests" / name
        d.mkdir(parents=True)
        (d / "component.yaml").write_text(meta)
        (d / "kustomization.yaml").write_text("resources: []\n")
    (root / "overlays").mkdir()
    (root / "platforms" / "kind").mkdir(parents=True)
    (root / "platforms" / "kind" / "platform.yaml").write_text(
        "name: kind\ndescription: kind.\ndefaultComponents: [common, db]\n"
    )
    return load_catalog(root)


@pytest.fixture
def tiny(tmp_path: Path) -> Catalog:
    return write_catalog(tmp_path / "catalog")


def write_app(app: Path, catalog: Catalog, *, apps: tuple[str, ...] = ("common", "db"), params: str = "") -> KfDef:
    """APPDIR/kfdef.yaml of these applications and their rendered files (db's Deployment references the Secret
    the KfDef brings, else the generated one)."""
    app.mkdir(parents=True, exist_ok=True)
    text = kfdef_text(*apps)
    if params:
        text = text.replace("path: manifests/db}}", f"path: manifests/db}}, parameters: [{params}]}}")
    (app / "kfdef.yaml").write_text(text)
    (app / "rendered").mkdir(exist_ok=True)
    brought = params.split("value: ")[1].rstrip("}") if params else "db-secret"
    (app / "rendered" / "common.yaml").write_text(NAMESPACE)
    (app / "rendered" / "db.yaml").write_text(DEPLOYMENT % brought + "---\n" + CLAIM)
    return load_kfdef(app / "kfdef.yaml", catalog)


def fake() -> FakeCluster:
    c = FakeCluster()
    c.on_apply("PersistentVolumeClaim", lambda o: o.setdefault("status", {}).update({"phase": "Bound"}))
    return c


def put_namespace(cluster: FakeCluster) -> None:
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )


def put_secret(cluster: FakeCluster, name: str, data: dict[str, str]) -> None:
    """A Secret someone else made (no kfctl label)."""
    cluster.put(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "kubeflow"}, "data": data}
    )


def apply(kfdef: KfDef, catalog: Catalog, cluster: FakeCluster, log: EventLog | None = None) -> Any:
    summary = apply_kfdef(
        kfdef,
        catalog,
        open_cluster=lambda: cluster,
        reporter=log if log is not None else EventLog(),
        options=FAST,
        prune=PRUNE,
        render=False,
    )
    assert summary.error is None, summary.error
    return summary


def values(cluster: FakeCluster, key: ObjectKey = SECRET) -> dict[str, str]:
    live = cluster.live(key)
    assert live is not None, f"{key} does not exist"
    return {k: base64.b64decode(v).decode() for k, v in live["data"].items()}


def row(name: str, source: str, state: str, **keys: str) -> dict[str, Any]:
    """A Secret as status reports it (-o json .secrets[])."""
    return {"name": name, "namespace": "kubeflow", "application": "db", "source": source, "state": state, "keys": keys}


def leaks(text: str, secret_values: dict[str, str]) -> list[str]:
    forms = []
    for v in secret_values.values():
        b64 = base64.b64encode(v.encode()).decode()
        forms += [v, b64, b64.rstrip("=")]
    return [f for f in forms if len(f) >= 8 and f in text]


# --- the catalog's declaration ----------------------------------------------------------------------------


def test_the_catalog_declares_keys_not_values(tiny: Catalog) -> None:
    (secret,) = tiny.components["db"].secrets
    assert (secret.name, secret.protects, secret.parameter, secret.fixed_name) == (
        "db-secret",
        "db-data",
        "dbSecretRef",
        "",
    )
    assert [(k.name, k.length, k.alphabet, k.value) for k in secret.keys] == [
        ("user", 0, "alphanumeric", "admin"),
        ("password", 24, "alphanumeric", None),
    ]


BAD_DECLARATIONS = [
    pytest.param("secrets: {db-secret: {}}", "secrets must be a list of Secrets to generate", id="not a list"),
    pytest.param("secrets: [{name: Db_Secret, keys: {a: {length: 20}}}]", "secrets[0]: needs a name", id="bad name"),
    pytest.param("secrets: [{name: s, keys: {}}]", "secrets[0].keys: must map each key", id="no keys"),
    pytest.param(
        "secrets: [{name: s, keys: {a: {length: 8}}}]",
        "secrets[0].keys.a: length must be an integer from 16 to 128, got 8",
        id="too short",
    ),
    pytest.param(
        "secrets: [{name: s, keys: {a: {alphabet: hex}}}]",
        "secrets[0].keys.a: length is missing; it must be an integer from 16 to 128",
        id="no length",
    ),
    pytest.param(
        "secrets: [{name: s, keys: {a: {length: 20, alphabet: null}}}]",
        "secrets[0].keys.a: alphabet is empty; it must be one of alphanumeric, lowercase-alphanumeric, hex",
        id="empty alphabet",
    ),
    pytest.param(
        "secrets: [{name: s, keys: {a: {length: 20, alphabet: emoji}}}]",
        "secrets[0].keys.a: alphabet must be one of alphanumeric, lowercase-alphanumeric, hex, got 'emoji'",
        id="unknown alphabet",
    ),
    pytest.param(
        "secrets: [{name: s, keys: {a: {value: x, length: 20}}}]",
        "secrets[0].keys.a: a fixed key is {value: TEXT} alone",
        id="fixed and drawn",
    ),
    pytest.param(
        "secrets: [{name: s, parameter: nope, keys: {a: {length: 20}}}]",
        "secrets[0].parameter: 'nope' must be a dns-subdomain parameter of this component whose default is 's'",
        id="undeclared parameter",
    ),
    pytest.param(
        "secrets: [{name: s, value: x, keys: {a: {length: 20}}}]",
        "secrets[0]: unknown field(s) value",
        id="unknown field",
    ),
]


@pytest.mark.parametrize(("yaml_text", "message"), BAD_DECLARATIONS)
def test_a_malformed_declaration_is_a_config_error_naming_the_field(
    tmp_path: Path, yaml_text: str, message: str
) -> None:
    component = "name: db\ndescription: x.\nnamespace: kubeflow\nplatforms: [kind]\n" + yaml_text + "\n"
    with pytest.raises(ConfigError) as e:
        write_catalog(tmp_path / "c", component)
    assert str(e.value).startswith(f"{tmp_path / 'c' / 'manifests' / 'db' / 'component.yaml'}: {message}")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            "Not_A_Name",
            "parameter \"dbSecretRef\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most "
            '253), e.g. "db-secret"; got "Not_A_Name"',
            id="not a Secret's name",
        ),
    ],
)
def test_a_brought_secret_must_be_named_like_a_secret(tmp_path: Path, tiny: Catalog, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        write_app(tmp_path / "app", tiny, params=f"{{name: dbSecretRef, value: {value}}}")
    assert message in "\n".join(e.value.details)


def test_a_fixed_name_secret_can_only_be_brought_under_its_name(real_catalog: Catalog, tmp_path: Path) -> None:
    component = real_catalog.components["pipelines"]
    from kfctl.catalog.model import secret_reference_problem

    assert secret_reference_problem(component, "objectStoreSecretRef", "mlpipeline-minio-artifact") is None
    problem = secret_reference_problem(component, "objectStoreSecretRef", "my-s3")
    assert problem is not None
    assert problem.startswith('parameter "objectStoreSecretRef" must be "mlpipeline-minio-artifact", got \'my-s3\'')
    assert "backend/src/v2/config/env.go" in problem


# --- apply ---------------------------------------------------------------------------------------------------


def test_first_apply_generates_the_secret_before_the_workload_and_never_shows_a_value(
    tmp_path: Path, tiny: Catalog
) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster, log = fake(), EventLog()
    summary = apply(kfdef, tiny, cluster, log)
    got = values(cluster)
    assert got["user"] == "admin"
    assert len(got["password"]) == 24 and set(got["password"]) <= set(string.ascii_letters + string.digits)
    live = cluster.live(SECRET)
    assert live is not None
    assert live["metadata"]["labels"][labels.PART_OF] == load_bundle(kfdef, tiny).applyset_id
    assert live["metadata"]["annotations"][labels.GENERATED_ANNOTATION] == "password"
    assert live["metadata"]["annotations"][labels.PROTECTS_ANNOTATION] == "db-data"
    # Ordered before the workload that reads it, recorded like every object, reported by its keys only.
    created = [e.subject for e in log.of("Created")]
    assert created.index(str(SECRET)) < created.index("Deployment.apps kubeflow/db")
    assert [(e.subject, e.message) for e in log.of("Generated")] == [
        (
            str(SECRET),
            "password drawn at random for this install; user set as the component declares (values are never shown)",
        )
    ]
    said = json.dumps([e.as_dict() for e in log.events]) + json.dumps(summary.as_dict())
    assert leaks(said, got) == []
    assert "db-secret" not in (tmp_path / "app" / "rendered" / "db.yaml").read_text().split("secretKeyRef")[0]


@pytest.mark.parametrize("run", ["first apply", "re-apply", "secret deleted by hand"])
def test_the_secret_and_its_claim_are_read_from_the_ownership_scan_not_again(
    tmp_path: Path, tiny: Catalog, run: str
) -> None:
    """The ownership scan has just listed both under the same lock: a GET of each would only cost requests."""
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    if run != "first apply":
        apply(kfdef, tiny, cluster)
    if run == "secret deleted by hand":
        cluster.objects.pop(SECRET)
    read: list[ObjectKey] = []
    real_get = cluster.get

    def get(api_version: str, kind: str, *, namespace: str, name: str) -> Any:
        read.append(ObjectKey("", kind, namespace, name))
        return real_get(api_version, kind, namespace=namespace, name=name)

    cluster.get = get  # type: ignore[method-assign]
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert SECRET not in read and PVC not in read, read
    assert len(values(cluster)["password"]) == 24
    orphaned = [e.message for e in log.of("Generated") if "warning" in e.message]
    assert len(orphaned) == (run == "secret deleted by hand")


def test_reapply_writes_nothing_and_keeps_every_value(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    before = values(cluster)
    writes = len(cluster.writes)
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert len(cluster.writes) == writes
    assert values(cluster) == before
    assert log.of("Generated") == []


def test_a_value_changed_in_the_cluster_is_kept_and_a_missing_key_added(tmp_path: Path, tiny: Catalog) -> None:
    """Never overwrite: someone rotated the password (the database has it now); the catalog grew a key."""
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    live = cluster.live(SECRET)
    assert live is not None
    live["data"] = {"password": base64.b64encode(b"rotated-by-the-dba").decode()}  # user is gone too
    cluster.put(live)
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert values(cluster) == {"password": "rotated-by-the-dba", "user": "admin"}
    assert [e.message for e in log.of("Generated")] == [
        "user set as the component declares; password kept as the cluster holds them (values are never shown)"
    ]


def test_two_installs_get_different_passwords(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    first, second = fake(), fake()
    apply(kfdef, tiny, first)
    apply(kfdef, tiny, second)
    assert values(first)["password"] != values(second)["password"]


def test_an_old_render_holding_the_secret_is_refused(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    old = "apiVersion: v1\nkind: Secret\nmetadata: {name: db-secret, namespace: kubeflow}\nstringData: {password: x}\n"
    rendered = tmp_path / "app" / "rendered" / "db.yaml"
    rendered.write_text(rendered.read_text() + "---\n" + old)
    with pytest.raises(RenderError) as e:
        load_bundle(kfdef, tiny)
    assert str(e.value) == (
        f"{rendered} holds Secret kubeflow/db-secret, which kfctl now generates in the cluster with random values"
    )
    assert e.value.hint == f"run `kfctl generate {tmp_path / 'app'}` to render the application again"


# --- bring your own ------------------------------------------------------------------------------------------

BROUGHT = "{name: dbSecretRef, value: my-db}"


@pytest.mark.parametrize(
    ("existing", "problem"),
    [
        pytest.param(
            None,
            "Secret kubeflow/my-db (db parameter dbSecretRef) does not exist; it needs key(s) user, password",
            id="missing",
        ),
        pytest.param(
            {"user": "eA=="},
            "Secret kubeflow/my-db (db parameter dbSecretRef) lacks key(s) password (it has user)",
            id="a key missing",
        ),
    ],
)
def test_a_brought_secret_must_exist_with_every_key_before_anything_is_written(
    tmp_path: Path, tiny: Catalog, existing: dict[str, str] | None, problem: str
) -> None:
    kfdef = write_app(tmp_path / "app", tiny, params=BROUGHT)
    cluster = fake()
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )
    if existing is not None:
        cluster.put(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "my-db", "namespace": "kubeflow"},
                "data": existing,
            }
        )
    with pytest.raises(PlanError) as e:
        apply_kfdef(
            kfdef, tiny, open_cluster=lambda: cluster, reporter=EventLog(), options=FAST, prune=PRUNE, render=False
        )
    assert e.value.exit_code == 5
    assert str(e.value) == ("1 Secret(s) the KfDef brings instead of generated ones are not ready; nothing was written")
    assert e.value.details == [problem]
    assert e.value.hint == (
        "create each with the keys named (kubectl -n kubeflow create secret generic my-db --from-literal=user=… "
        "--from-literal=password=…), or drop the parameter from the KfDef and kfctl generates the Secret at the "
        "first apply"
    )
    assert cluster.writes == []


def test_a_brought_secret_is_used_and_nothing_is_generated(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny, params=BROUGHT)
    cluster = fake()
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )
    mine = {"user": base64.b64encode(b"me").decode(), "password": base64.b64encode(b"mine").decode()}
    cluster.put(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "my-db", "namespace": "kubeflow"}, "data": mine}
    )
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert cluster.live(SECRET) is None and log.of("Generated") == []
    assert cluster.live(ObjectKey("", "Secret", "kubeflow", "my-db"))["data"] == mine  # type: ignore[index]
    dep = cluster.live(ObjectKey("apps", "Deployment", "kubeflow", "db"))
    assert dep is not None
    assert dep["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "my-db"
    report = status_of(kfdef, tiny, open_cluster=lambda: cluster)
    assert [s.as_dict() for s in report.secrets] == [
        row("my-db", "brought", "present", user="present", password="present")
    ]


# --- diff and status -----------------------------------------------------------------------------------------


def test_diff_and_status_show_keys_never_values(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    before = diff_kfdef(kfdef, tiny, open_cluster=lambda: cluster, render=False)
    assert [(d.subject, d.action, d.patch) for d in before.diffs if d.subject == str(SECRET)] == [
        (str(SECRET), "create", [])
    ]
    apply(kfdef, tiny, cluster)
    after = diff_kfdef(kfdef, tiny, open_cluster=lambda: cluster, render=False)
    assert after.diffs == []
    # A key the cluster lacks: the change names it, "generated", and the kept one is not even digested.
    live = cluster.live(SECRET)
    assert live is not None
    del live["data"]["user"]
    cluster.put(live)
    changed = diff_kfdef(kfdef, tiny, open_cluster=lambda: cluster, render=False)
    (d,) = changed.diffs
    assert (d.action, [op for op in d.patch if op["path"].startswith("/data")]) == (
        "update",
        [{"op": "add", "path": "/data/user", "value": "generated"}],
    )
    report = status_of(kfdef, tiny, open_cluster=lambda: cluster)
    assert [s.as_dict() for s in report.secrets] == [
        row("db-secret", "generated", "incomplete", user="missing", password="generated")
    ]
    assert not report.healthy
    (status,) = [o for o in report.objects if o.key == SECRET]
    assert status.health.message == "generated by kfctl; keys present: password; protects PersistentVolumeClaim db-data"
    said = json.dumps(report.as_dict()) + json.dumps(changed.as_dict())
    assert leaks(said, values(cluster)) == []


# --- delete and prune ----------------------------------------------------------------------------------------


def delete(kfdef: KfDef, cluster: FakeCluster, *, storage: bool) -> Any:
    return delete_kfdef(
        kfdef,
        open_cluster=lambda: cluster,
        reporter=EventLog(),
        options=delete_options(delete_storage=storage, wait_timeout=2.0),
        force=False,
    )


def test_delete_keeps_the_secret_beside_the_kept_volume_and_a_reinstall_reuses_it(
    tmp_path: Path, tiny: Catalog
) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    before, uid = values(cluster), cluster.live(SECRET)["metadata"]["uid"]  # type: ignore[index]
    summary = delete(kfdef, cluster, storage=False)
    assert summary.error is None
    assert f"{SECRET}: {KEPT_BESIDE} kept without --delete-storage" in summary.kept
    assert cluster.live(PVC) is not None and cluster.live(SECRET) is not None
    apply(kfdef, tiny, cluster)
    assert values(cluster) == before and cluster.live(SECRET)["metadata"]["uid"] == uid  # type: ignore[index]
    summary = delete(kfdef, cluster, storage=True)
    assert summary.error is None and cluster.live(SECRET) is None and cluster.live(PVC) is None


def test_prune_keeps_the_secret_while_its_volume_stays(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    dropped = write_app(tmp_path / "app", tiny, apps=("common",))
    summary = apply(dropped, tiny, cluster)
    assert cluster.live(SECRET) is not None and cluster.live(PVC) is not None
    assert any(k.startswith(str(SECRET)) and "kept without --prune-storage" in k for k in summary.kept)
    # Once the volume is gone (pruned by hand, or with --prune-storage), the Secret protects nothing.
    cluster.objects.pop(PVC)
    apply(dropped, tiny, cluster)
    assert cluster.live(SECRET) is None


# --- kfctl secrets apply -------------------------------------------------------------------------------------


def test_secrets_apply_creates_what_apply_would_and_changes_nothing_after(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    with pytest.raises(PlanError) as e:
        apply_secrets(kfdef, tiny, open_cluster=lambda: cluster, reporter=EventLog())
    assert str(e.value) == "namespace(s) kubeflow do not exist; the generated Secrets go there"
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )
    first = apply_secrets(kfdef, tiny, open_cluster=lambda: cluster, reporter=EventLog())
    assert first.rows() == [(str(SECRET), "created")]
    made = values(cluster)
    writes = cluster.stats.writes
    again = apply_secrets(kfdef, tiny, open_cluster=lambda: cluster, reporter=EventLog())
    assert again.rows() == [(str(SECRET), "unchanged")] and cluster.stats.writes == writes
    # Then kfctl apply takes it as this install's own and keeps its values, without writing it.
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert values(cluster) == made and str(SECRET) in [e.subject for e in log.of("Unchanged")]


def test_secrets_apply_leaves_a_secret_that_is_not_the_installs_alone(tmp_path: Path, tiny: Catalog) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )
    theirs = {"password": base64.b64encode(b"from-vault").decode()}
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db-secret", "namespace": "kubeflow"},
            "data": theirs,
        }
    )
    summary = apply_secrets(kfdef, tiny, open_cluster=lambda: cluster, reporter=EventLog())
    assert summary.rows() == [(str(SECRET), "kept")]
    assert cluster.live(SECRET)["data"] == theirs  # type: ignore[index]


def test_the_secrets_apply_command_prints_keys_and_results_never_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fakecluster import write_app as write_catalog_app

    from kfctl.cli import target
    from kfctl.cli.main import main

    cluster = fake()
    put_namespace(cluster)
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    app = tmp_path / "demo"
    write_catalog_app(app, "common", "cert-manager", "pipelines")
    assert main(["secrets", "apply", str(app), "-o", "json", "--detailed-exitcode"]) == 15
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert [
        (s["object"], s["namespace"], s["name"], s["application"], s["keys"], s["result"]) for s in summary["secrets"]
    ] == [
        ("Secret kubeflow/mysql-secret", "kubeflow", "mysql-secret", "pipelines", ["username", "password"], "created"),
        (
            "Secret kubeflow/mlpipeline-minio-artifact",
            "kubeflow",
            "mlpipeline-minio-artifact",
            "pipelines",
            ["accesskey", "secretkey"],
            "created",
        ),
    ]
    assert summary["changed"] is True
    made = {**values(cluster, ObjectKey("", "Secret", "kubeflow", "mysql-secret"))}
    made |= {
        f"s3-{k}": v
        for k, v in values(cluster, ObjectKey("", "Secret", "kubeflow", "mlpipeline-minio-artifact")).items()
    }
    assert sorted(made) == ["password", "s3-accesskey", "s3-secretkey", "username"]
    assert made["username"] == "root" and len(made["password"]) == 32 and len(made["s3-secretkey"]) == 40
    del made["username"]  # not a secret: the catalog fixes it
    assert leaks(out, made) == []
    assert main(["secrets", "apply", str(app), "--detailed-exitcode"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines() == [
        "SECRET                                     RESULT",
        "Secret kubeflow/mysql-secret               unchanged",
        "Secret kubeflow/mlpipeline-minio-artifact  unchanged",
    ]


def test_an_install_of_an_older_kfctl_keeps_its_values_and_is_told_they_are_the_shared_defaults(
    tmp_path: Path, tiny: Catalog
) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    live = cluster.live(SECRET)
    assert live is not None
    live["data"]["password"] = base64.b64encode(b"kfp-default-mysql-password-change-me").decode()
    live["metadata"]["annotations"] = {"kfctl.kubeflow.org/default-credentials": "true"}  # as the old catalog had
    cluster.put(live)
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    assert values(cluster) == {"user": "admin", "password": "kfp-default-mysql-password-change-me"}
    assert [(e.subject, e.message) for e in log.of("Kept")] == [
        (
            str(SECRET),
            "password still holds the catalog's former shared default (every install had it): change the value in "
            "the service and in the Secret together (see docs/credentials.md)",
        )
    ]
    assert str(SECRET) in [e.subject for e in log.of("Configured")]  # the old annotation goes, the values stay


def test_a_secret_deleted_by_hand_while_its_volume_stays_is_drawn_again_with_a_warning(
    tmp_path: Path, tiny: Catalog
) -> None:
    kfdef = write_app(tmp_path / "app", tiny)
    cluster = fake()
    apply(kfdef, tiny, cluster)
    cluster.objects.pop(SECRET)
    log = EventLog()
    apply(kfdef, tiny, cluster, log)
    (event,) = log.of("Generated")
    assert event.message == (
        "password drawn at random for this install; user set as the component declares; warning: "
        "PersistentVolumeClaim kubeflow/db-data exists already, its data set up with values this Secret no longer "
        "holds; restore the Secret from a backup, or delete the claim too (values are never shown)"
    )
