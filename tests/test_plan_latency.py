"""Scheduling latency: from the last dependency ready to the dependent's apply returning, one row per case."""

from __future__ import annotations

import pytest
from fakecluster import obj, served_crd

from kfctl.plan.graph import build_plan
from kfctl.plan.latency import Latency, scheduling_latencies, summarize

NS, CM, WIDGET = "Namespace demo", "ConfigMap demo/c", "Widget.example.com demo/w"
CRD = "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com"
PLAN = build_plan(
    [
        (
            "app",
            [
                obj("v1", "Namespace", "demo"),
                obj("v1", "ConfigMap", "c", "demo"),
                served_crd("example.com", "Widget", "widgets"),
                obj("example.com/v1", "Widget", "w", "demo"),
            ],
        )
    ],
    depends_on={},
)


@pytest.mark.parametrize(
    ("ready_at", "applied_at", "expected"),
    [
        pytest.param(
            {NS: 0.5, CRD: 1.0, CM: 0.7, WIDGET: 1.4},
            {NS: 0.1, CRD: 0.1, CM: 0.7, WIDGET: 1.3},
            {CM: 0.2, WIDGET: 0.3},
            id="held by the later of its dependencies (the CRD at 1.0, not the namespace at 0.5)",
        ),
        pytest.param(
            {NS: 0.5},
            {NS: 0.1, CM: 0.6},
            {CM: 0.1},
            id="steps without dependencies, or never applied, are left out",
        ),
        pytest.param({}, {}, {}, id="nothing applied"),
    ],
)
def test_scheduling_latency(
    ready_at: dict[str, float], applied_at: dict[str, float], expected: dict[str, float]
) -> None:
    got = scheduling_latencies(PLAN, ready_at, applied_at)
    assert {k: round(v, 6) for k, v in got.items()} == expected


@pytest.mark.parametrize(
    ("latencies", "expected"),
    [
        ({"a": 0.1, "b": 0.3, "c": 0.2}, Latency(3, 0.2, 0.3, 0.3)),
        ({f"s{i}": i / 10 for i in range(1, 21)}, Latency(20, 1.05, 2.0, 1.9)),
        ({}, None),
    ],
)
def test_the_summary_is_median_p95_and_max(latencies: dict[str, float], expected: Latency | None) -> None:
    assert summarize(latencies) == expected
