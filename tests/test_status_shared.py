"""An object two applications render is applied once (kfctl.plan.duplicates) but belongs to both: `kfctl status`
counts it under each application that renders it, and once among the objects, as apply's end table counts it
under each and once in the run's totals (issue 29 item 6; application_rows alone: test_plan_critical). Table:
which object is unhealthy after the install → each application's health, and the objects as status lists them;
the text (a line under the applications says how many objects are shared) and -o json's ``shared``.

Hermetic: tests/shared_apps.py's `common` and `training-operator`, both rendering the ClusterRole `shared`,
applied to the fake cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakecluster import FakeCluster
from shared_apps import NOTE, OPERATOR_KEY, SHARED_KEY, install, with_namespace, written

from kfctl.app.apply import ApplySummary
from kfctl.app.status import status_of
from kfctl.catalog.load import load_catalog
from kfctl.cli import target
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.engine import inventory
from kfctl.health.model import Health
from kfctl.objects import ObjectKey


def installed(tmp_path: Path) -> tuple[FakeCluster, Path, ApplySummary]:
    """Both applications render `shared`; the KfDef lists common first, so its step applies it. The namespace
    exists already (no application renders it)."""
    path = written(tmp_path / "app")
    cluster = with_namespace()
    return cluster, path, install(cluster, path)


def test_apply_counts_a_shared_object_under_each_application_and_once_in_the_totals(tmp_path: Path) -> None:
    _, _, summary = installed(tmp_path)
    assert [(a.name, a.objects, a.created, a.state) for a in summary.applications] == [
        ("common", 2, 2, "ready"),
        ("training-operator", 2, 2, "ready"),
    ]
    assert (summary.objects, summary.created) == (3, 3)


@pytest.mark.parametrize(
    ("missing", "by_application"),
    [
        pytest.param(
            None,
            {"common": Health("ready", "2 objects ready"), "training-operator": Health("ready", "2 objects ready")},
            id="all-ready",
        ),
        pytest.param(
            SHARED_KEY,
            {
                "common": Health("failed", "1 failed of 2"),
                "training-operator": Health("failed", "1 failed of 2"),
            },
            id="the-shared-object-is-gone-from-both",
        ),
        pytest.param(
            OPERATOR_KEY,
            {"common": Health("ready", "2 objects ready"), "training-operator": Health("failed", "1 failed of 2")},
            id="an-own-object-is-gone-from-one",
        ),
    ],
)
def test_status_counts_a_shared_object_under_each_application_and_once_in_the_objects(
    tmp_path: Path, missing: ObjectKey | None, by_application: dict[str, Health]
) -> None:
    cluster, path, _ = installed(tmp_path)
    if missing is not None:
        cluster.objects.pop(missing)
    catalog = load_catalog()
    report = status_of(load_kfdef(path, catalog), catalog, open_cluster=lambda: cluster)
    assert report.by_application() == by_application
    assert [(str(o.key), o.applications) for o in report.objects] == [
        ("ConfigMap kubeflow/common-config", ("common",)),
        ("ClusterRole.rbac.authorization.k8s.io shared", ("common", "training-operator")),
        ("ConfigMap kubeflow/operator-config", ("training-operator",)),
    ]
    (shared,) = [o for o in report.as_dict()["objects"] if o["object"].startswith("ClusterRole")]
    assert (shared["application"], shared["alsoIn"]) == ("common", ["training-operator"])


def test_the_inventory_records_who_else_renders_an_object_and_reads_records_without_it(tmp_path: Path) -> None:
    cluster, _, _ = installed(tmp_path)
    inv = inventory.read(cluster, name=inventory.parent_name("demo"), namespace="kubeflow")
    assert inv is not None
    assert {str(k): (m.application, m.also_in) for k, m in inv.members.items()} == {
        "ClusterRole.rbac.authorization.k8s.io shared": ("common", ("training-operator",)),
        "ConfigMap kubeflow/common-config": ("common", ()),
        "ConfigMap kubeflow/operator-config": ("training-operator", ()),
    }
    unshared = inventory.Member(OPERATOR_KEY, "training-operator", "u1")
    assert "alsoIn" not in unshared.as_dict(), "a record of an earlier version reads and compares the same"


@pytest.mark.parametrize(
    ("missing", "code", "out"),
    [
        pytest.param(
            None,
            0,
            [
                "APPLICATION            STATE        DETAIL",
                "common                 ready        2 objects ready",
                "training-operator      ready        2 objects ready",
                NOTE,
                "",
                "OBJECT                                                            STATE        DETAIL",
                "ConfigMap kubeflow/common-config                                   ready        applied",
                "ClusterRole.rbac.authorization.k8s.io shared                       ready        applied",
                "ConfigMap kubeflow/operator-config                                 ready        applied",
            ],
            id="all ready: under each application, once among the objects",
        ),
        pytest.param(
            SHARED_KEY,
            8,
            [
                "APPLICATION            STATE        DETAIL",
                "common                 failed       1 failed of 2",
                "training-operator      failed       1 failed of 2",
                NOTE,
                "",
                "OBJECT                                                            STATE        DETAIL",
                "ConfigMap kubeflow/common-config                                   ready        applied",
                "ClusterRole.rbac.authorization.k8s.io shared                       failed       missing",
                "ConfigMap kubeflow/operator-config                                 ready        applied",
            ],
            id="the shared object gone: failed in both, one object not healthy",
        ),
    ],
)
def test_the_text_counts_a_shared_object_under_each_application_and_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    missing: ObjectKey | None,
    code: int,
    out: list[str],
) -> None:
    cluster, path, _ = installed(tmp_path)
    if missing is not None:
        cluster.objects.pop(missing)
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    capsys.readouterr()
    assert main(["status", str(path.parent), "--all"]) == code
    printed = capsys.readouterr()
    assert printed.out.splitlines() == out
    assert ("1 object(s) are not healthy" in printed.err) == bool(code)
    assert main(["status", str(path.parent), "-o", "json"]) == code
    assert json.loads(capsys.readouterr().out)["shared"] == 1
