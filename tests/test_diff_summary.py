"""`kfctl diff` after an upgrade: a summary per application first, immutable changes named, kept kinds flagged.

One application `common` moves from an old render to a new one: a ConfigMap changes, one is added, a
Deployment's selector changes (immutable), and the inventory still lists a ConfigMap, a Namespace and a CRD
the new render dropped.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from fakecluster import FakeCluster, obj, write_app

from kfctl.app.diff import diff_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.diff_cmd import format_diff
from kfctl.config.loader import load_kfdef
from kfctl.engine import labels
from kfctl.engine.inventory import Inventory, Member, applyset_id, parent_name
from kfctl.k8s.api import ApiError
from kfctl.objects import ObjectKey

AGGREGATED = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "kubeflow-admin"},
    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"aggregate-to-admin": "true"}}]},
    "rules": [],
}
RENDERED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: changed, namespace: kubeflow}
data: {a: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: added, namespace: kubeflow}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: kubeflow}
data: {a: "1"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: kubeflow}
spec:
  selector: {matchLabels: {app: web, tier: front}}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec: {containers: [{name: c, image: x}]}
---
""" + yaml.safe_dump(AGGREGATED)
SELECTOR = 'Deployment.apps "web" is invalid: spec.selector: Invalid value: {...}: field is immutable'
DROPPED = [
    (ObjectKey("", "ConfigMap", "kubeflow", "dropped"), ""),
    (ObjectKey("", "Namespace", "", "old-team"), "apply keeps namespaces without --prune-namespaces"),
    (
        ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "olds.example.org"),
        "apply keeps CRDs without --prune-crds",
    ),
]


def upgraded(tmp_path: Path) -> FakeCluster:
    write_app(tmp_path, "common", rendered={"common": RENDERED})
    cluster = FakeCluster()
    cluster.put(obj("v1", "Namespace", "kube-system"))
    cluster.put(obj("v1", "ConfigMap", "changed", "kubeflow", data={"a": "1"}))
    same = obj("v1", "ConfigMap", "same", "kubeflow", data={"a": "1"})
    same["metadata"]["labels"] = {  # as kfctl applied it
        "applyset.kubernetes.io/part-of": applyset_id(name=parent_name("demo"), namespace="kubeflow"),
        "kfctl.kubeflow.org/app": "demo",
        "kfctl.kubeflow.org/application": "common",
    }
    cluster.put(same)
    # As kfctl applied it, then the aggregation controller filled its rules: apply skips it, so must diff.
    applied = labels.prepare(
        AGGREGATED,
        applyset_id=applyset_id(name=parent_name("demo"), namespace="kubeflow"),
        kfdef_name="demo",
        application="common",
    )
    cluster.put({**applied, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    web = obj("apps/v1", "Deployment", "web", "kubeflow", spec={"selector": {"matchLabels": {"app": "web"}}})
    cluster.put(web)
    cluster.fail(
        ObjectKey("apps", "Deployment", "kubeflow", "web"),
        ApiError(
            422,
            SELECTOR,
            reason="Invalid",
            causes=[{"field": "spec.selector", "message": "Invalid value: {...}: field is immutable"}],
        ),
    )
    inv = Inventory(parent_name("demo"), "kubeflow", "")
    for key, _ in DROPPED:
        inv.members[key] = Member(key, "common")
    cluster.put(inv.to_object())
    return cluster


def test_the_summary_counts_each_action_per_application(tmp_path: Path) -> None:
    catalog = load_catalog()
    cluster = upgraded(tmp_path)
    report = diff_kfdef(
        load_kfdef(tmp_path / "kfdef.yaml", catalog), catalog, open_cluster=lambda: cluster, render=False
    )
    assert report.summary() == {"common": {"create": 1, "update": 1, "prune": 3, "recreate": 1, "unchanged": 2}}
    actions = {(d.subject, d.action, d.reason) for d in report.diffs if d.action in ("prune", "recreate")}
    assert actions == {
        ("Deployment.apps kubeflow/web", "recreate", SELECTOR),
        *((str(key), "prune", why) for key, why in DROPPED),
    }
    web = next(d for d in report.diffs if d.action == "recreate")
    assert web.immutable == ("spec.selector",)
    as_json = report.as_dict()
    assert as_json["summary"] == report.summary()
    assert {"object": "Deployment.apps kubeflow/web", "application": "common", "action": "recreate"}.items() <= next(
        c for c in as_json["changes"] if c["action"] == "recreate"
    ).items()


def test_the_text_leads_with_the_summary_then_what_needs_a_recreate(tmp_path: Path) -> None:
    catalog = load_catalog()
    cluster = upgraded(tmp_path)
    report = diff_kfdef(
        load_kfdef(tmp_path / "kfdef.yaml", catalog), catalog, open_cluster=lambda: cluster, render=False
    )
    text = format_diff(report)
    head = text.split("\n\n")[0].splitlines()
    assert head == [
        "APPLICATION  ADDED  CHANGED  REMOVED  RECREATE  UNCHANGED",
        "common           1        1        3         1          2",
        "total            1        1        3         1          2",
    ]
    assert (
        "1 object(s) cannot be changed in place (immutable fields); `kfctl apply`\n"
        "stops on them unless run with --recreate-immutable, which deletes and recreates them:\n"
        "  Deployment.apps kubeflow/web  [common]: spec.selector\n"
    ) in text
    assert "- Namespace old-team (prune)\n    apply keeps namespaces without --prune-namespaces\n" in text
    assert text.endswith("6 change(s), 2 unchanged")
