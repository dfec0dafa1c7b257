"""Scheduling latency: from the last dependency ready to the dependent's apply returning, one row per case; the part
queued before the request was sent, and the long ones by cause."""

from __future__ import annotations

import pytest
from fakecluster import obj, served_crd

from kfctl.plan.graph import build_plan
from kfctl.plan.latency import Latency, bucket_labels, queue_waits, scheduling_latencies, summarize

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
        ({"a": 0.1, "b": 0.3, "c": 0.2}, Latency(3, 0.2, 0.3, 0.3, (1, 2, 0, 0, 0, 0, 0))),
        ({f"s{i}": i / 10 for i in range(1, 21)}, Latency(20, 1.05, 2.0, 1.9, (1, 4, 5, 10, 0, 0, 0))),
        ({"a": 0.0, "b": 4.0, "c": 12.5}, Latency(3, 4.0, 12.5, 12.5, (1, 0, 0, 0, 1, 0, 1))),
        ({}, None),
    ],
)
def test_the_summary_is_median_p95_max_and_a_histogram(latencies: dict[str, float], expected: Latency | None) -> None:
    assert summarize(latencies) == expected


def test_the_histograms_buckets_are_named_in_json() -> None:
    assert bucket_labels() == ["<=0.1s", "0.1-0.5s", "0.5-1s", "1-2s", "2-5s", "5-10s", ">10s"]
    assert summarize({"a": 0.05, "b": 7.0}).as_dict() == {  # type: ignore[union-attr]
        "steps": 2,
        "median": 3.525,
        "p95": 7.0,
        "max": 7.0,
        "histogram": {"<=0.1s": 1, "0.1-0.5s": 0, "0.5-1s": 0, "1-2s": 0, "2-5s": 0, "5-10s": 1, ">10s": 0},
    }


@pytest.mark.parametrize(
    ("started_at", "applied_at", "expected_queued", "expected_causes"),
    [
        pytest.param(
            {CM: 0.6, WIDGET: 3.0},
            {NS: 0.1, CRD: 0.1, CM: 0.7, WIDGET: 3.1},
            {CM: 0.1, WIDGET: 2.0},
            (("apply-slot", 1),),
            id="sent 2 s after the CRD was ready: queued for a slot (the ConfigMap's 0.2 s is not long)",
        ),
        pytest.param(
            {CM: 0.5, WIDGET: 1.0},
            {NS: 0.1, CRD: 0.1, CM: 1.6, WIDGET: 1.1},
            {CM: 0.0, WIDGET: 0.0},
            (("request", 1),),
            id="sent at once, answered 1.1 s later: the request's",
        ),
    ],
)
def test_the_queued_part_and_the_long_latencies_by_cause(
    started_at: dict[str, float],
    applied_at: dict[str, float],
    expected_queued: dict[str, float],
    expected_causes: tuple[tuple[str, int], ...],
) -> None:
    ready_at = {NS: 0.5, CRD: 1.0}
    queued = queue_waits(PLAN, ready_at, applied_at, started_at)
    assert {k: round(v, 6) for k, v in queued.items()} == expected_queued
    summary = summarize(scheduling_latencies(PLAN, ready_at, applied_at), plan=PLAN, queued=queued)
    assert summary is not None and summary.causes == expected_causes


def test_a_crd_queued_before_its_request_is_counted_under_the_gate() -> None:
    summary = summarize({CRD: 3.0, CM: 3.0}, plan=PLAN, queued={CRD: 2.9, CM: 1.0})
    assert summary is not None and summary.causes == (("crd-gate", 1), ("request", 1))
