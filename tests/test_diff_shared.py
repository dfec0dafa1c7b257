"""`kfctl diff`'s summary counts an object several applications render (applied once: kfctl.plan.duplicates)
under each of them and once in the totals, says so under the table, and names the others on the change
(``alsoIn``) in -o json, with the number of such objects (``shared``) (issue 29 item 6). Table: the cluster's
state before the diff → the summary, the table's lines and the JSON fields (``shared``, and each change's
``alsoIn``: the other applications that render it, none for an object of one application).

Hermetic: tests/shared_apps.py's `common` and `training-operator`, both rendering the ClusterRole `shared`;
installed (or not) on the fake cluster by apply, then changed by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import FakeCluster
from shared_apps import (
    COMMON,
    NOTE,
    OPERATOR,
    OPERATOR_KEY,
    RULE,
    SHARED_KEY,
    Setup,
    dropped_shared,
    edited,
    nothing,
    prepared,
    written,
)

from kfctl.app.diff import diff_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.diff_cmd import format_diff
from kfctl.config.loader import load_kfdef

HEAD = "APPLICATION        ADDED  CHANGED  REMOVED  RECREATE  UNCHANGED"


def counts(create: int = 0, update: int = 0, prune: int = 0, unchanged: int = 0) -> dict[str, int]:
    return {"create": create, "update": update, "prune": prune, "recreate": 0, "unchanged": unchanged}


@pytest.mark.parametrize(
    ("setup", "summary", "table", "shared", "also_in"),
    [
        pytest.param(
            nothing,
            {"common": counts(create=2), "training-operator": counts(create=2)},
            [
                HEAD,
                "common                 2        0        0         0          0",
                "training-operator      2        0        0         0          0",
                "total                  3        0        0         0          0",
                NOTE,
            ],
            1,
            {
                "ClusterRole.rbac.authorization.k8s.io shared": ["training-operator"],
                "ConfigMap kubeflow/common-config": None,
                "ConfigMap kubeflow/operator-config": None,
            },
            id="nothing installed: the shared object is added in both, once in the total",
        ),
        pytest.param(
            edited(SHARED_KEY, "rules", RULE),
            {"common": counts(update=1, unchanged=1), "training-operator": counts(update=1, unchanged=1)},
            [
                HEAD,
                "common                 0        1        0         0          1",
                "training-operator      0        1        0         0          1",
                "total                  0        1        0         0          2",
                NOTE,
            ],
            1,
            {"ClusterRole.rbac.authorization.k8s.io shared": ["training-operator"]},
            id="the shared object changed: in both",
        ),
        pytest.param(
            edited(OPERATOR_KEY, "data", {"b": "3"}),
            {"common": counts(unchanged=2), "training-operator": counts(update=1, unchanged=1)},
            [
                HEAD,
                "common                 0        0        0         0          2",
                "training-operator      0        1        0         0          1",
                "total                  0        1        0         0          2",
                NOTE,
            ],
            1,
            {"ConfigMap kubeflow/operator-config": None},
            id="an own object changed: in its application only; the shared one unchanged in both",
        ),
        pytest.param(
            dropped_shared,
            {"common": counts(prune=1, unchanged=1), "training-operator": counts(prune=1, unchanged=1)},
            [
                HEAD,
                "common                 0        0        1         0          1",
                "training-operator      0        0        1         0          1",
                "total                  0        0        1         0          2",
                NOTE,
            ],
            1,
            {"ClusterRole.rbac.authorization.k8s.io shared": ["training-operator"]},
            id="the shared object is no longer rendered: removed from both (the inventory's alsoIn)",
        ),
    ],
)
def test_the_summary_counts_a_shared_object_under_each_application_once_in_the_total(
    tmp_path: Path,
    setup: Setup,
    summary: dict[str, dict[str, int]],
    table: list[str],
    shared: int,
    also_in: dict[str, list[str] | None],
) -> None:
    cluster, path = prepared(tmp_path / "app", setup)
    catalog = load_catalog()
    report = diff_kfdef(load_kfdef(path, catalog), catalog, open_cluster=lambda: cluster, render=False)
    assert report.summary() == summary
    assert format_diff(report).split("\n\n")[0].splitlines() == table
    as_json = report.as_dict()
    assert (as_json["summary"], as_json["shared"]) == (summary, shared)
    assert {c["object"]: c.get("alsoIn") for c in as_json["changes"]} == also_in


def test_nothing_shared_no_note_and_the_same_totals(tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    written(app_dir, {"common": COMMON, "training-operator": OPERATOR})
    cluster = FakeCluster()
    catalog = load_catalog()
    report = diff_kfdef(
        load_kfdef(app_dir / "kfdef.yaml", catalog), catalog, open_cluster=lambda: cluster, render=False
    )
    assert format_diff(report).split("\n\n")[0].splitlines() == [
        HEAD,
        "common                 1        0        0         0          0",
        "training-operator      1        0        0         0          0",
        "total                  2        0        0         0          0",
    ]
    assert report.as_dict()["shared"] == 0
