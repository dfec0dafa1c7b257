"""Two applications of the built-in catalog, `common` and `training-operator`, that both render the ClusterRole
`shared` (applied once, under common, the KfDef's first: kfctl.plan.duplicates), each with a ConfigMap of its
own; for the tests of how status, apply, apply --dry-run, diff and delete count such an object (issue 29
item 6), with the situations their tables share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fakecluster import FakeCluster, write_app

from kfctl.app.apply import ApplySummary, apply_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.config.loader import load_kfdef
from kfctl.engine.apply import ApplyOptions
from kfctl.engine.events import EventLog, Reporter
from kfctl.engine.remove import RemoveOptions
from kfctl.objects import ObjectKey

SHARED = (
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: shared}\n"
    "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n"
)
COMMON = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: common-config, namespace: kubeflow}\ndata: {a: '1'}\n"
OPERATOR = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: operator-config, namespace: kubeflow}\ndata: {b: '2'}\n"
BOTH = {"common": f"{SHARED}---\n{COMMON}", "training-operator": f"{OPERATOR}---\n{SHARED}"}
SHARED_KEY = ObjectKey("rbac.authorization.k8s.io", "ClusterRole", "", "shared")
OPERATOR_KEY = ObjectKey("", "ConfigMap", "kubeflow", "operator-config")
# The line under a table that counts per application (apply, apply --dry-run, diff, delete, status).
NOTE = "1 object(s) shared by several applications are counted under each, once in the total"


def written(app_dir: Path, rendered: dict[str, str] = BOTH) -> Path:
    """APPDIR with the KfDef (common first) and the rendered files; the KfDef's path."""
    return write_app(app_dir, "common", "training-operator", rendered=rendered)


def with_namespace() -> FakeCluster:
    """A fake cluster with the `kubeflow` namespace (no application renders it)."""
    cluster = FakeCluster()
    cluster.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": "Active"}}
    )
    return cluster


def run_apply(cluster: FakeCluster, path: Path, reporter: Reporter | None = None) -> ApplySummary:
    """`kfctl apply --skip-generate` of the KfDef at ``path``: its summary, which may hold an error."""
    catalog = load_catalog()
    return apply_kfdef(
        load_kfdef(path, catalog),
        catalog,
        open_cluster=lambda: cluster,
        reporter=reporter or EventLog(),
        options=ApplyOptions(wait_timeout=5.0, timeout=30.0, poll_interval=0.01),
        prune=RemoveOptions(wait_timeout=2.0, poll_interval=0.01),
        render=False,
    )


def install(cluster: FakeCluster, path: Path, reporter: Reporter | None = None) -> ApplySummary:
    """`kfctl apply --skip-generate` of the KfDef at ``path``; it must succeed."""
    summary = run_apply(cluster, path, reporter)
    assert summary.error is None, summary.error
    return summary


Setup = Callable[[FakeCluster, Path], None]  # the cluster and APPDIR as a row's situation leaves them


def nothing(cluster: FakeCluster, app_dir: Path) -> None:
    """No install yet."""


def edited(key: ObjectKey, field: str, value: object) -> Setup:
    """Installed; then a field of one object changed by hand."""

    def setup(cluster: FakeCluster, app_dir: Path) -> None:
        install(cluster, app_dir / "kfdef.yaml")
        cluster.objects[key][field] = value

    return setup


RULE = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}]  # a ClusterRole's rules, by hand


def dropped_shared(cluster: FakeCluster, app_dir: Path) -> None:
    """Installed; then the new render of both applications no longer holds `shared`."""
    install(cluster, app_dir / "kfdef.yaml")
    written(app_dir, {"common": COMMON, "training-operator": OPERATOR})


def prepared(app_dir: Path, setup: Setup) -> tuple[FakeCluster, Path]:
    """Both applications written into ``app_dir``, a cluster with the namespace, then ``setup``; the cluster and
    the KfDef's path."""
    path = written(app_dir)
    cluster = with_namespace()
    setup(cluster, app_dir)
    return cluster, path
