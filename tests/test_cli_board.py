"""The live view's lines (kfctl.cli.board) for a recorded event stream, at moments of the run: what a person
sees on a terminal during `kfctl apply` and `kfctl delete`. Times are seconds after the command started (T0)."""

from __future__ import annotations

import pytest

from kfctl.cli.board import Board
from kfctl.engine.events import Event

T0 = 1_000.0
CERTS = "Deployment.apps cert-manager/cert-manager-webhook"
OPERATOR = "Deployment.apps kubeflow/training-operator"


def ev(at: float, kind: str, subject: str, app: str, message: str = "", count: int = 0) -> Event:
    return Event(kind, subject, message, app=app, at=T0 + at, count=count)  # type: ignore[arg-type]


APPLY = [
    ev(0.1, "Planned", "application cert-manager", "cert-manager", "2 objects", 2),
    ev(0.1, "Planned", "application training-operator", "training-operator", "2 objects; after cert-manager", 2),
    ev(0.5, "Created", "Namespace cert-manager", "cert-manager"),
    ev(0.7, "Created", CERTS, "cert-manager"),
    ev(1.0, "Waiting", CERTS, "cert-manager", "0/1 available"),
    ev(3.0, "Healthy", CERTS, "cert-manager", "1/1 available"),
    ev(3.0, "Healthy", "application cert-manager", "cert-manager", "all 2 objects ready"),
    ev(3.2, "Created", "ServiceAccount kubeflow/training-operator", "training-operator"),
    ev(3.3, "Created", OPERATOR, "training-operator"),
    ev(3.5, "Waiting", OPERATOR, "training-operator", "0/1 available"),
    ev(4.0, "Failed", OPERATOR, "training-operator", "timed out: 0/1 available"),
]


@pytest.mark.parametrize(
    ("until", "now", "expected"),
    [
        pytest.param(
            0.1,
            0.2,
            [
                "   APPLICATION        STATE        OBJECTS  TIME",
                "·  cert-manager       pending  0/2 applied",
                "·  training-operator  pending  0/2 applied        after cert-manager",
            ],
            id="planned",
        ),
        pytest.param(
            1.0,
            2.0,
            [
                "   APPLICATION        STATE        OBJECTS  TIME",
                f"·  cert-manager       waiting  2/2 applied  2.0s  waiting for {CERTS}: 0/1 available",
                "·  training-operator  pending  0/2 applied        after cert-manager",
            ],
            id="waiting for cert-manager's webhook",
        ),
        pytest.param(
            4.0,
            9.0,
            [
                "   APPLICATION        STATE       OBJECTS  TIME",
                "✓  cert-manager       ready   2/2 applied  3.0s",
                f"×  training-operator  failed  2/2 applied  4.0s  {OPERATOR}: timed out: 0/1 available",
            ],
            id="one ready, one failed",
        ),
    ],
)
def test_the_apply_view(until: float, now: float, expected: list[str]) -> None:
    board = Board("apply", start=T0)
    for e in APPLY:
        if e.at <= T0 + until:
            board(e)
    assert board.lines(T0 + now) == expected


def test_the_delete_view_counts_removed_and_kept() -> None:
    board = Board("delete", start=T0)
    for e in [
        ev(0.1, "Planned", "application katib", "katib", "3 objects", 3),
        ev(0.1, "Planned", "application common", "common", "1 objects", 1),
        ev(0.5, "Deleting", "Deployment.apps kubeflow/katib-controller", "katib"),
        ev(1.5, "Deleted", "Deployment.apps kubeflow/katib-controller", "katib"),
        ev(1.6, "Kept", "PersistentVolumeClaim kubeflow/katib-mysql", "katib", "storage is kept"),
        ev(2.0, "Deleted", "Service kubeflow/katib-ui", "katib"),
    ]:
        board(e)
    assert board.lines(T0 + 5.0) == [
        "   APPLICATION  STATE                OBJECTS  TIME",
        "✓  katib        deleted  2/3 removed, 1 kept  2.0s",
        "·  common       pending          0/1 removed",
    ]


def test_events_of_no_application_are_not_shown() -> None:
    board = Board("apply", start=T0)
    board(Event("Inventory", "inventory", "recorded", at=T0 + 0.1))
    assert board.lines(T0 + 1.0) == ["  APPLICATION  STATE  OBJECTS  TIME"]


# An object two applications render is applied once, under the first; its events name the other (also_in), and
# it counts under each (issue 29 item 6). Here the ClusterRole `shared` is common's and training-operator's.
SHARED = "ClusterRole.rbac.authorization.k8s.io shared"
BOTH = ("training-operator",)
SHARED_RUN = [
    ev(0.1, "Planned", "application common", "common", "2 objects", 2),
    ev(0.1, "Planned", "application training-operator", "training-operator", "2 objects; after common", 2),
    ev(0.5, "Created", "ConfigMap kubeflow/common-config", "common"),
    Event("Created", SHARED, app="common", at=T0 + 0.6, also_in=BOTH),
    Event("Waiting", SHARED, "not yet", app="common", at=T0 + 0.7, also_in=BOTH),
]


@pytest.mark.parametrize(
    ("then", "expected"),
    [
        pytest.param(
            [],
            [
                "   APPLICATION        STATE         OBJECTS  TIME",
                f"·  common             waiting   2/2 applied  5.0s  waiting for {SHARED}: not yet",
                f"·  training-operator  applying  1/2 applied  5.0s  waiting for {SHARED}: not yet",
            ],
            id="the shared object waits in both",
        ),
        pytest.param(
            [
                Event("Healthy", SHARED, "ready", app="common", at=T0 + 1.0, also_in=BOTH),
                ev(1.0, "Healthy", "application common", "common", "all 2 objects ready"),
                ev(1.5, "Created", "ConfigMap kubeflow/operator-config", "training-operator"),
                ev(2.0, "Healthy", "application training-operator", "training-operator", "all 2 objects ready"),
            ],
            [
                "   APPLICATION        STATE      OBJECTS  TIME",
                "✓  common             ready  2/2 applied  1.0s",
                "✓  training-operator  ready  2/2 applied  2.0s",
            ],
            id="both ready: 2/2 each, 3 objects in all",
        ),
        pytest.param(
            [Event("Failed", SHARED, "timed out", app="common", at=T0 + 3.0, also_in=BOTH)],
            [
                "   APPLICATION        STATE       OBJECTS  TIME",
                f"×  common             failed  2/2 applied  3.0s  {SHARED}: timed out",
                f"×  training-operator  failed  1/2 applied  3.0s  {SHARED}: timed out",
            ],
            id="the shared object fails both",
        ),
    ],
)
def test_a_shared_object_counts_under_each_application(then: list[Event], expected: list[str]) -> None:
    board = Board("apply", start=T0)
    for e in [*SHARED_RUN, *then]:
        board(e)
    assert board.lines(T0 + 5.0) == expected
