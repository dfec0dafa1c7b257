"""`kfctl apply --dry-run` counts an object several applications render (applied once, under the first:
kfctl.plan.duplicates) under each of them in its table per application, once in its total line, and says so
under the table; -o json names the others on the object (``alsoIn``) and counts such objects (``shared``), as
`kfctl apply` and `kfctl diff` do (issue 29 item 6). Table: the cluster's state before the dry run → the exact
text, and the JSON's counts per application.

Hermetic: tests/shared_apps.py's `common` and `training-operator`, both rendering the ClusterRole `shared`,
through the CLI's main against the fake cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_apps import (
    COMMON,
    NOTE,
    OPERATOR,
    RULE,
    SHARED_KEY,
    Setup,
    dropped_shared,
    edited,
    nothing,
    prepared,
    with_namespace,
    written,
)

from kfctl.cli import target
from kfctl.cli.main import main

HEAD = "APPLICATION        CREATED  CONFIGURED  UNCHANGED  PRUNED  RECREATE  PENDING  FOREIGN  DENIED"
SHARED = "ClusterRole.rbac.authorization.k8s.io shared"
DONE = "(server-side dry run: nothing persisted)"


def verdicts(**counts: int) -> dict[str, int]:
    zero = dict.fromkeys(("configured", "created", "denied", "foreign", "pending", "pruned", "recreate", "unchanged"))
    return {k: counts.get(k, 0) for k in zero}


@pytest.mark.parametrize(
    ("setup", "text", "applications"),
    [
        pytest.param(
            nothing,
            [
                f"{SHARED}: created (server dry run)",
                "ConfigMap kubeflow/common-config: created (server dry run)",
                "ConfigMap kubeflow/operator-config: created (server dry run)",
                "",
                HEAD,
                "common                   2           0          0       0         0        0        0       0",
                "training-operator        2           0          0       0         0        0        0       0",
                NOTE,
                f"3 objects: 3 created {DONE}",
            ],
            {"common": verdicts(created=2), "training-operator": verdicts(created=2)},
            id="nothing installed: the shared object would be created in both, once in the total",
        ),
        pytest.param(
            edited(SHARED_KEY, "rules", RULE),
            [
                f"{SHARED}: configured (server dry run)",
                "",
                HEAD,
                "common                   0           1          1       0         0        0        0       0",
                "training-operator        0           1          1       0         0        0        0       0",
                NOTE,
                f"3 objects: 1 configured, 2 unchanged {DONE}",
            ],
            {
                "common": verdicts(configured=1, unchanged=1),
                "training-operator": verdicts(configured=1, unchanged=1),
            },
            id="the shared object changed by hand: configured in both",
        ),
        pytest.param(
            dropped_shared,
            [
                f"{SHARED}: pruned (server dry run)",
                "",
                HEAD,
                "common                   0           0          1       1         0        0        0       0",
                "training-operator        0           0          1       1         0        0        0       0",
                NOTE,
                f"3 objects: 2 unchanged, 1 pruned {DONE}",
            ],
            {"common": verdicts(unchanged=1, pruned=1), "training-operator": verdicts(unchanged=1, pruned=1)},
            id="the shared object no longer rendered: pruned from both (the inventory's alsoIn)",
        ),
    ],
)
def test_the_dry_run_counts_a_shared_object_under_each_application_once_in_the_total(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: Setup,
    text: list[str],
    applications: dict[str, dict[str, int]],
) -> None:
    cluster, path = prepared(tmp_path / "app", setup)
    app_dir = path.parent
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    capsys.readouterr()
    assert main(["apply", str(app_dir), "--skip-generate", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == text
    assert main(["apply", str(app_dir), "--skip-generate", "--dry-run", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["applications"], doc["shared"]) == (applications, 1)
    also_in = {o["object"]: o.get("alsoIn") for o in doc["objects"]}
    assert also_in == {
        SHARED: ["training-operator"],
        "ConfigMap kubeflow/common-config": None,
        "ConfigMap kubeflow/operator-config": None,
    }


def test_nothing_shared_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app_dir = tmp_path / "app"
    written(app_dir, {"common": COMMON, "training-operator": OPERATOR})
    cluster = with_namespace()
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    assert main(["apply", str(app_dir), "--skip-generate", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-4:] == [
        HEAD,
        "common                   1           0          0       0         0        0        0       0",
        "training-operator        1           0          0       0         0        0        0       0",
        f"2 objects: 2 created {DONE}",
    ]
    assert main(["apply", str(app_dir), "--skip-generate", "--dry-run", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["shared"] == 0
