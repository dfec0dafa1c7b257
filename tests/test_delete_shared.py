"""`kfctl delete` counts an object several applications render (applied once, under the first:
kfctl.plan.duplicates; the inventory's alsoIn) under each of them in its live view, and once in its total
("Deleted N object(s)"), saying so under it; -o json's summary counts such objects (``shared``), and
`delete --dry-run -o json` names the others on the object (``alsoIn``), as apply does (issue 29 item 6).
Table: the cluster's state before the delete → the live view's lines at the end, and the end text.

Hermetic: tests/shared_apps.py's `common` and `training-operator`, both rendering the ClusterRole `shared`,
installed on the fake cluster and deleted; the live view replays the recorded events.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fakecluster import FakeCluster
from shared_apps import COMMON, NOTE, OPERATOR, SHARED_KEY, install, with_namespace, written

from kfctl.app.delete import DeleteSummary, delete_kfdef, delete_options
from kfctl.catalog.load import load_catalog
from kfctl.cli import target
from kfctl.cli.board import Board
from kfctl.cli.delete_cmd import format_deleted
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.engine import labels
from kfctl.engine.events import Event, EventLog

SHARED = "ClusterRole.rbac.authorization.k8s.io shared"
T0 = 1_000.0


def as_installed(cluster: FakeCluster) -> None:
    pass


def shared_label_removed(cluster: FakeCluster) -> None:
    """Someone took the shared object over (no longer carries the install's label): delete leaves it alone."""
    cluster.objects[SHARED_KEY]["metadata"]["labels"].pop(labels.PART_OF)


def shared_held(cluster: FakeCluster) -> None:
    cluster.objects[SHARED_KEY]["metadata"]["finalizers"] = ["example.com/cleanup"]


def deleted(tmp_path: Path, change: Callable[[FakeCluster], None]) -> tuple[DeleteSummary, list[Event]]:
    """Installs both applications, changes the cluster, deletes the install; its summary and events."""
    path = written(tmp_path / "app")
    cluster = with_namespace()
    install(cluster, path)
    change(cluster)
    log = EventLog()
    summary = delete_kfdef(
        load_kfdef(path, load_catalog()),
        open_cluster=lambda: cluster,
        reporter=log,
        options=delete_options(wait_timeout=0.1),
        force=False,
    )
    return summary, log.events


def test_the_events_count_a_shared_object_under_each_application(tmp_path: Path) -> None:
    _, events = deleted(tmp_path, as_installed)
    planned = [(e.app, e.count, e.message) for e in events if e.type == "Planned"]
    assert planned == [("common", 2, "2 objects"), ("training-operator", 2, "2 objects")]
    shared = [e for e in events if e.subject == SHARED]
    assert [(e.type, e.app, e.as_dict()["alsoIn"]) for e in shared] == [
        ("Deleting", "common", ["training-operator"]),
        ("Deleted", "common", ["training-operator"]),
    ]
    unshared = [e.as_dict() for e in events if e.subject.startswith("ConfigMap")]
    assert unshared and all("alsoIn" not in d for d in unshared)


HELD = "still present after 0.1s; finalizers: example.com/cleanup"


@pytest.mark.parametrize(
    ("change", "view", "end"),
    [
        pytest.param(
            as_installed,
            [
                "   APPLICATION        STATE        OBJECTS  TIME",
                "✓  common             deleted  2/2 removed  1.0s",
                "✓  training-operator  deleted  2/2 removed  1.0s",
            ],
            ["Deleted 3 object(s) in 0.2s", NOTE],
            id="all deleted: the shared object removed from both, once in the total",
        ),
        pytest.param(
            shared_label_removed,
            [
                "   APPLICATION        STATE                OBJECTS  TIME",
                "✓  common             deleted  1/2 removed, 1 kept  1.0s",
                "✓  training-operator  deleted  1/2 removed, 1 kept  1.0s",
            ],
            ["Deleted 2 object(s) in 0.2s", NOTE],
            id="the shared object left alone: kept in both",
        ),
        pytest.param(
            shared_held,
            [
                "   APPLICATION        STATE      OBJECTS  TIME",
                f"×  common             stuck  1/2 removed  1.0s  {SHARED}: {HELD}",
                f"×  training-operator  stuck  1/2 removed  1.0s  {SHARED}: {HELD}",
            ],
            ["Deleted 2 object(s) in 0.2s", NOTE],
            id="the shared object stuck on a finalizer: stuck in both",
        ),
    ],
)
def test_the_live_view_and_the_end_count_a_shared_object_under_each_once_in_the_total(
    tmp_path: Path, change: Callable[[FakeCluster], None], view: list[str], end: list[str]
) -> None:
    summary, events = deleted(tmp_path, change)
    board = Board("delete", start=T0)
    for e in events:
        board(dataclasses.replace(e, at=T0 + 1.0))  # the run's own moments vary; the counts are what is tested
    assert [line.rstrip() for line in board.lines(T0 + 2.0)] == view
    kfdef = load_kfdef(tmp_path / "app" / "kfdef.yaml", load_catalog())
    text = format_deleted(kfdef, dataclasses.replace(summary, seconds=0.2, error=None)).splitlines()
    assert text[:2] == end
    assert summary.as_dict()["shared"] == 1


def test_nothing_shared_no_note(tmp_path: Path) -> None:
    path = written(tmp_path / "app", {"common": COMMON, "training-operator": OPERATOR})
    summary = DeleteSummary(found=True, deleted=2, seconds=0.2)
    assert format_deleted(load_kfdef(path, load_catalog()), summary) == "Deleted 2 object(s) in 0.2s"
    assert summary.as_dict()["shared"] == 0


def test_the_dry_run_names_the_other_applications_of_a_shared_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path / "app")
    cluster = with_namespace()
    install(cluster, path)
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    capsys.readouterr()
    assert main(["delete", str(path.parent), "--dry-run", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(o["subject"], o["application"], o.get("alsoIn")) for o in doc["objects"]] == [
        ("ConfigMap kubeflow/common-config", "common", None),
        ("ConfigMap kubeflow/operator-config", "training-operator", None),
        (SHARED, "common", ["training-operator"]),
    ]
    assert (doc["summary"]["delete"], doc["shared"]) == (3, 1)
