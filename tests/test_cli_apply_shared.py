"""`kfctl apply`'s live view and end table count an object several applications render (applied once, under
the first: kfctl.plan.duplicates) under each of them, and once in the run's totals (issue 29 item 6). The
engine's events of such an object name the other applications (``alsoIn``), each application's Planned count
and its "all N objects ready" include it, and a line under the end table says how many objects are shared.
What befalls it shows in each application's row: refused, each one failed; pruned, each one's pruned count.

Hermetic: tests/shared_apps.py's `common` and `training-operator`, both rendering the ClusterRole `shared`,
applied to the fake cluster; the live view replays the recorded events.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fakecluster import FakeCluster
from shared_apps import NOTE, SHARED_KEY, Setup, dropped_shared, install, prepared, run_apply, with_namespace, written

from kfctl.app.apply import ApplySummary
from kfctl.app.per_application import ApplicationRow
from kfctl.cli.apply_cmd import format_applications
from kfctl.cli.board import Board
from kfctl.engine.events import Event, EventLog
from kfctl.k8s.api import ApiError

SHARED_ID = "ClusterRole.rbac.authorization.k8s.io shared"
T0 = 1_000.0


def applied(tmp_path: Path) -> tuple[ApplySummary, list[Event]]:
    """Both applications render `shared`; the KfDef lists common first, so its step applies it."""
    log = EventLog()
    summary = install(with_namespace(), written(tmp_path / "app"), log)
    return summary, log.events


def test_the_events_count_a_shared_object_under_each_application(tmp_path: Path) -> None:
    _, events = applied(tmp_path)
    planned = [(e.app, e.count, e.message) for e in events if e.type == "Planned"]
    assert planned == [("common", 2, "2 objects"), ("training-operator", 2, "2 objects; after common")]
    shared = [e for e in events if e.subject == SHARED_ID]  # a ClusterRole is ready when applied: no Healthy
    assert [(e.type, e.app, e.also_in) for e in shared] == [("Created", "common", ("training-operator",))]
    assert [e.as_dict()["alsoIn"] for e in shared] == [["training-operator"]]
    ready = sorted((e.app, e.message) for e in events if e.type == "Healthy" and e.subject.startswith("application "))
    assert ready == [("common", "all 2 objects ready"), ("training-operator", "all 2 objects ready")]
    unshared = [e.as_dict() for e in events if e.subject.startswith("ConfigMap")]
    assert unshared and all("alsoIn" not in d for d in unshared)


def test_the_live_view_counts_a_shared_object_under_each_application(tmp_path: Path) -> None:
    _, events = applied(tmp_path)
    board = Board("apply", start=T0)
    for e in events:
        board(dataclasses.replace(e, at=T0 + 1.0))  # the run's own moments vary; the counts are what is tested
    assert board.lines(T0 + 2.0) == [
        "   APPLICATION        STATE      OBJECTS  TIME",
        "✓  common             ready  2/2 applied  1.0s",
        "✓  training-operator  ready  2/2 applied  1.0s",
    ]


def test_the_end_table_counts_a_shared_object_under_each_and_says_so(tmp_path: Path) -> None:
    summary, _ = applied(tmp_path)
    assert [(a.name, a.objects, a.created) for a in summary.applications] == [
        ("common", 2, 2),
        ("training-operator", 2, 2),
    ]
    assert (summary.objects, summary.created, summary.shared) == (3, 3, 1)
    as_json = summary.as_dict()
    assert (as_json["objects"], as_json["shared"]) == (3, 1)
    assert [(a["name"], a["objects"]) for a in as_json["applications"]] == [("common", 2), ("training-operator", 2)]


ROWS = [
    ApplicationRow("common", "ready", 2, 2, 0, 0, 0, 1.5),
    ApplicationRow("training-operator", "ready", 2, 2, 0, 0, 0, 2.0),
]
HEAD = "APPLICATION        STATE  OBJECTS  CREATED  CONFIGURED  UNCHANGED  PRUNED  HEALTHY AT"


@pytest.mark.parametrize(
    ("shared", "expected"),
    [
        pytest.param(
            0,
            [
                HEAD,
                "common             ready        2        2           0          0       0        1.5s",
                "training-operator  ready        2        2           0          0       0        2.0s",
            ],
            id="nothing shared: no note",
        ),
        pytest.param(
            1,
            [
                HEAD,
                "common             ready        2        2           0          0       0        1.5s",
                "training-operator  ready        2        2           0          0       0        2.0s",
                "1 object(s) shared by several applications are counted under each, once in the total",
            ],
            id="one shared object: the note under the table",
        ),
    ],
)
def test_the_end_table_text(shared: int, expected: list[str]) -> None:
    assert format_applications(ApplySummary(applications=ROWS, shared=shared)) == expected


def refused(cluster: FakeCluster, app_dir: Path) -> None:
    """Nothing installed; the API server refuses the shared object."""
    cluster.fail(SHARED_KEY, ApiError(403, DENIAL, reason="Forbidden"))


DENIAL = 'admission webhook "policy.example.org" denied the request: ClusterRoles need an owner label'


@pytest.mark.parametrize(
    ("setup", "rows", "totals"),
    [
        pytest.param(
            refused,
            [("common", "failed", 2, 1, 0, 0), ("training-operator", "failed", 2, 0, 0, 0)],
            (3, 1, 0, 1),
            id="the shared object refused: failed in both (training-operator's own object, after common, is held)",
        ),
        pytest.param(
            dropped_shared,
            [("common", "ready", 1, 0, 1, 1), ("training-operator", "ready", 1, 0, 1, 1)],
            (2, 0, 1, 1),
            id="the shared object no longer rendered: pruned from both (the inventory's alsoIn), once in the total",
        ),
    ],
)
def test_the_end_table_counts_what_befell_a_shared_object_under_each_application(
    tmp_path: Path,
    setup: Setup,
    rows: list[tuple[str, str, int, int, int, int]],
    totals: tuple[int, int, int, int],
) -> None:
    """rows: (application, state, objects, created, unchanged, pruned); totals: (objects, created, pruned, shared)."""
    cluster, path = prepared(tmp_path / "app", setup)
    summary = run_apply(cluster, path)
    assert [(a.name, a.state, a.objects, a.created, a.unchanged, a.pruned) for a in summary.applications] == rows
    assert (summary.objects, summary.created, summary.pruned, summary.shared) == totals
    assert NOTE in format_applications(summary)
