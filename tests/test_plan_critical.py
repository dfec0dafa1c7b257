"""What decided an apply's time: the critical path (kfctl.plan.critical) and the table per application
(kfctl.app.per_application), from a plan of our own and the moments the engine saw each step ready.

The plan: a `base` application (a Namespace, its CRD, a Deployment) and a `jobs` application that depends on
it (a custom resource of base's CRD, a Deployment). The Deployment of base is slow, but jobs waits only for
the API base serves (its CRD), so the path that decides the time runs through base's CRD, not its Deployment.
"""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.app.apply import ApplySummary
from kfctl.app.per_application import ApplicationRow, application_rows
from kfctl.cli.apply_cmd import format_applications
from kfctl.engine.apply import ApplyResult, Failure
from kfctl.objects import ObjectKey
from kfctl.plan.critical import Segment, critical_path
from kfctl.plan.duplicates import Copy
from kfctl.plan.graph import Plan, build_plan

NS = "Namespace ml"
CRD = "CustomResourceDefinition.apiextensions.k8s.io widgets.example.org"
BASE_DEPLOY = "Deployment.apps ml/base"
WIDGET = "Widget.example.org ml/w1"
JOBS_DEPLOY = "Deployment.apps ml/jobs"


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"spec": {"containers": []}}},
    }


def plan() -> Plan:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {
            "group": "example.org",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    return build_plan(
        [
            ("base", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, crd, deployment("base")]),
            (
                "jobs",
                [
                    {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "ml"}},
                    deployment("jobs"),
                ],
            ),
        ],
        depends_on={"jobs": ["base"]},
    )


# Seconds from the run's start: the Namespace at once, the CRD at 0.5 and with it application base (the API
# it serves); base's Deployment at 6.0, while jobs' objects started at 0.5 and its Deployment took 8.0 s.
# (Nothing waits for application jobs, so the plan has no step for it: its time is its last object's.)
READY = {
    NS: 0.2,
    CRD: 0.5,
    "application base": 0.5,
    WIDGET: 0.8,
    BASE_DEPLOY: 6.0,
    JOBS_DEPLOY: 8.5,
}


def test_the_critical_path_is_the_chain_of_waits_that_ended_last() -> None:
    assert critical_path(plan(), READY) == [
        Segment(CRD, "base", pytest.approx(0.5)),  # type: ignore[arg-type]
        Segment("application base", "base", 0.0),
        Segment(JOBS_DEPLOY, "jobs", pytest.approx(8.0)),  # type: ignore[arg-type]
    ]


def test_the_segments_add_up_to_the_time_to_ready() -> None:
    assert sum(s.seconds for s in critical_path(plan(), READY)) == pytest.approx(8.5)


def test_nothing_ready_no_path() -> None:
    assert critical_path(plan(), {}) == []


@pytest.mark.parametrize(
    ("result", "pruned", "expected"),
    [
        pytest.param(
            ApplyResult(created=[NS, CRD, BASE_DEPLOY, WIDGET], configured=[JOBS_DEPLOY], ready_at=READY),
            {"jobs": 2},
            [
                ApplicationRow("base", "ready", 3, 3, 0, 0, 0, 6.0),
                ApplicationRow("jobs", "ready", 2, 1, 1, 0, 2, 8.5),
            ],
            id="both ready; jobs pruned two",
        ),
        pytest.param(
            ApplyResult(
                created=[NS, CRD, BASE_DEPLOY],
                failed=[Failure(BASE_DEPLOY, "timed out", ())],
                blocked=[Failure(WIDGET, "blocked", ()), Failure(JOBS_DEPLOY, "blocked", ())],
                ready_at={NS: 0.2, CRD: 0.5},
            ),
            {},
            [
                ApplicationRow("base", "failed", 3, 3, 0, 0, 0, None),
                ApplicationRow("jobs", "blocked", 2, 0, 0, 0, 0, None),
            ],
            id="base failed, jobs blocked",
        ),
        pytest.param(
            ApplyResult(unchanged=[NS, CRD, BASE_DEPLOY, WIDGET, JOBS_DEPLOY], ready_at=READY),
            {},
            [
                ApplicationRow("base", "ready", 3, 0, 0, 3, 0, 6.0),
                ApplicationRow("jobs", "ready", 2, 0, 0, 2, 0, 8.5),
            ],
            id="a re-apply",
        ),
    ],
)
def test_one_row_per_application(result: ApplyResult, pruned: dict[str, int], expected: list[ApplicationRow]) -> None:
    assert application_rows(plan(), result, pruned) == expected


def test_apply_ends_with_the_table_and_the_critical_path() -> None:
    summary = ApplySummary(
        applications=application_rows(
            plan(), ApplyResult(created=[NS, CRD, BASE_DEPLOY, WIDGET, JOBS_DEPLOY], ready_at=READY), {}
        ),
        critical_path=critical_path(plan(), READY),
    )
    assert format_applications(summary) == [
        "APPLICATION  STATE  OBJECTS  CREATED  CONFIGURED  UNCHANGED  PRUNED  HEALTHY AT",
        "base         ready        3        3           0          0       0        6.0s",
        "jobs         ready        2        2           0          0       0        8.5s",
        "critical path (8.5s): CustomResourceDefinition.apiextensions.k8s.io widgets.example.org 0.5s → "
        "Deployment.apps ml/jobs 8.0s",
    ]


def test_an_object_two_applications_render_counts_under_both_and_once_in_the_totals() -> None:
    shared = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    p = build_plan(
        [("base", [shared, deployment("base")]), ("jobs", [deployment("jobs")])],
        depends_on={},
        copies=[Copy(ObjectKey("", "Namespace", "", "ml"), kept_in="base", dropped_from="jobs")],
    )
    ready = {NS: 0.1, BASE_DEPLOY: 2.0, JOBS_DEPLOY: 3.0}
    rows = application_rows(p, ApplyResult(created=[NS, BASE_DEPLOY, JOBS_DEPLOY], ready_at=ready), {})
    assert [(r.name, r.objects, r.created, r.seconds) for r in rows] == [("base", 2, 2, 2.0), ("jobs", 2, 2, 3.0)]
