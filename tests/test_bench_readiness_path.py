"""bench/readiness_path.py: the readiness critical path as the server recorded it, one row per situation."""

from __future__ import annotations

from typing import Any

import pytest
from readiness_path import (
    CriticalPath,
    Graph,
    Segment,
    Timeline,
    critical_path,
    plan_graph,
    timelines,
)

NS = "Namespace cert-manager"
HOOK = "Deployment.apps cert-manager/cert-manager-webhook"
HOOK_BACKEND = "webhook backend cert-manager/cert-manager-webhook"
CERT = "Certificate.cert-manager.io kubeflow/serving-cert"
KSERVE = "Deployment.apps kubeflow/kserve-controller-manager"
KSERVE_BACKEND = "webhook backend kubeflow/kserve-webhook-server-service"
RUNTIME = "ClusterServingRuntime.serving.kserve.io kserve-sklearnserver"
CM = "ConfigMap kubeflow/inferenceservice-config"


def ident(sid: str) -> tuple[str, str, str, str]:
    kind_group, _, rest = sid.partition(" ")
    kind, _, group = kind_group.partition(".")
    ns, _, name = rest.rpartition("/")
    return (group, kind, ns, name)


def graph(deps: dict[str, list[str | tuple[str, bool]]]) -> Graph:
    return Graph(
        {sid: [d if isinstance(d, tuple) else (d, False) for d in ds] for sid, ds in deps.items()},
        {sid: ident(sid) for sid in deps if not sid.startswith("webhook backend")},
    )


# cert-manager's webhook → the serving Certificate → KServe's webhook backend → a ClusterServingRuntime, with
# KServe's controller beside it: what B1's sample waits through.
KSERVE_PLAN = graph(
    {
        NS: [],
        CM: [],
        HOOK: [NS],
        HOOK_BACKEND: [HOOK],
        CERT: [HOOK_BACKEND],
        KSERVE: [CM],
        KSERVE_BACKEND: [KSERVE, CERT],
        RUNTIME: [KSERVE_BACKEND],
    }
)
T = 1_800_000_000.0  # server seconds; each row's times are offsets from it


def tl(start: float, ready: float) -> Timeline:
    return Timeline(T + start, T + ready)


@pytest.mark.parametrize(
    ("plan", "recorded", "wall", "expected", "overhead"),
    [
        pytest.param(
            KSERVE_PLAN,
            {ident(HOOK): tl(1, 4), ident(CERT): tl(5, 6), ident(KSERVE): tl(2, 15)},
            20.0,
            [(KSERVE, 13.0)],
            7.0,
            id="KServe's 13 s start-up beside cert-manager's 3 s + 1 s chain: the longer branch is the path",
        ),
        pytest.param(
            KSERVE_PLAN,
            {ident(HOOK): tl(1, 9), ident(CERT): tl(10, 12), ident(KSERVE): tl(2, 8)},
            14.5,
            [(HOOK, 8.0), (CERT, 2.0)],
            4.5,
            id="the chain adds up: webhook 8 s → Certificate 2 s, past KServe's 6 s",
        ),
        pytest.param(
            graph({HOOK: [], CERT: [HOOK], KSERVE: [CERT]}),
            {ident(HOOK): tl(0, 5), ident(CERT): tl(1, 7), ident(KSERVE): tl(1, 20)},
            60.0,
            [(HOOK, 5.0), (CERT, 2.0), (KSERVE, 13.0)],
            40.0,
            id="created before its dependencies were ready (kapp: everything at once): each waits from then on",
        ),
        pytest.param(
            graph({HOOK: [], CERT: [(HOOK, True)], KSERVE: [CERT]}),
            {ident(HOOK): tl(0, 5), ident(CERT): tl(0, 2), ident(KSERVE): tl(2, 4)},
            6.0,
            [(HOOK, 5.0)],
            1.0,
            id="an order-only edge passes on the dependency's start: the dependent's chain (2 + 2 s) is shorter",
        ),
        pytest.param(
            graph({HOOK: [], CERT: [(HOOK, True)], KSERVE: [CERT]}),
            {ident(HOOK): tl(0, 1), ident(CERT): tl(0, 2), ident(KSERVE): tl(2, 6)},
            6.0,
            [(CERT, 2.0), (KSERVE, 4.0)],
            0.0,
            id="through an order-only edge the dependency's own wait is not on the path",
        ),
        pytest.param(
            graph({HOOK: [], CERT: [HOOK]}),
            {ident(HOOK): tl(3, 3), ident(CERT): tl(4, 3)},
            2.0,
            [],
            2.0,
            id="ready in the second it started, or in the one before (1 s truncation): no wait",
        ),
        pytest.param(KSERVE_PLAN, {}, 3.0, [], 3.0, id="nothing recorded a transition: all of it is overhead"),
    ],
)
def test_critical_path(
    plan: Graph,
    recorded: dict[tuple[str, str, str, str], Timeline],
    wall: float,
    expected: list[tuple[str, float]],
    overhead: float,
) -> None:
    path = critical_path(plan, recorded)
    assert path == CriticalPath(tuple(Segment(s, x) for s, x in expected))
    assert path.overhead(wall) == overhead


def test_describe_leaves_out_short_segments() -> None:
    path = CriticalPath((Segment(HOOK, 8.0), Segment(CERT, 0.5), Segment(KSERVE, 13.0)))
    assert path.describe() == f"22 s: {HOOK} 8 s → {KSERVE} 13 s"


def pod(name: str, owner: tuple[str, str, str], *, started: str | None, ready: str | None) -> dict[str, Any]:
    api, kind, owner_name = owner
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ready:
        status["conditions"][0]["lastTransitionTime"] = ready
    if started:
        status["containerStatuses"] = [{"name": "c", "state": {"running": {"startedAt": started}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "kubeflow",
            "creationTimestamp": "2026-11-27T02:00:01Z",
            "ownerReferences": [{"apiVersion": api, "kind": kind, "name": owner_name}],
        },
        "status": status,
    }


def with_condition(api: str, kind: str, name: str, condition: str, when: str, ns: str = "") -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-27T02:00:00Z"},
        "status": {"conditions": [{"type": condition, "status": "True", "lastTransitionTime": when}]},
    }


BASE = 1_795_744_800.0  # 2026-11-27T02:00:00Z


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [
                pod(
                    "kserve-controller-manager-5d8f-x1",
                    ("apps/v1", "ReplicaSet", "kserve-controller-manager-5d8f"),
                    started="2026-11-27T02:00:07Z",
                    ready="2026-11-27T02:00:20Z",
                ),
                with_condition(
                    "apps/v1", "Deployment", "kserve-controller-manager", "Available", "2026-11-27T02:00:21Z"
                ),
            ],
            {("apps", "Deployment", "kubeflow", "kserve-controller-manager"): Timeline(BASE + 7, BASE + 20)},
            id="a Deployment is its pod: from the container's start (after its Secret mounted) to Ready",
        ),
        pytest.param(
            [
                pod("db-0", ("apps/v1", "StatefulSet", "db"), started=None, ready="2026-11-27T02:00:04Z"),
                pod("db-1", ("apps/v1", "StatefulSet", "db"), started="2026-11-27T02:00:05Z", ready=None),
            ],
            {("apps", "StatefulSet", "kubeflow", "db"): Timeline(BASE + 1, BASE + 4)},
            id="no container start recorded: the pod's creation; a pod not Ready is left out",
        ),
        pytest.param(
            [
                with_condition(
                    "apiextensions.k8s.io/v1",
                    "CustomResourceDefinition",
                    "certificates.cert-manager.io",
                    "Established",
                    "2026-11-27T02:00:00Z",
                ),
                with_condition(
                    "cert-manager.io/v1", "Certificate", "serving-cert", "Ready", "2026-11-27T02:00:06Z", "kubeflow"
                ),
                with_condition("batch/v1", "Job", "migrate", "Complete", "2026-11-27T02:00:09Z", "kubeflow"),
                with_condition("batch/v1", "Job", "stuck", "Ready", "2026-11-27T02:00:09Z", "kubeflow"),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kubeflow"}},
            ],
            {
                ("apiextensions.k8s.io", "CustomResourceDefinition", "", "certificates.cert-manager.io"): Timeline(
                    BASE, BASE
                ),
                ("cert-manager.io", "Certificate", "kubeflow", "serving-cert"): Timeline(BASE, BASE + 6),
                ("batch", "Job", "kubeflow", "migrate"): Timeline(BASE, BASE + 9),
            },
            id="each kind's own condition (Established, Complete, else Ready); nothing for a ConfigMap",
        ),
    ],
)
def test_timelines(items: list[dict[str, Any]], expected: dict[tuple[str, str, str, str], Timeline]) -> None:
    assert timelines(items) == expected


def test_plan_graph_reads_kfctl_plan_json() -> None:
    plan = {
        "waves": [
            [{"step": NS, "object": {"group": "", "kind": "Namespace", "namespace": "", "name": "cert-manager"}}],
            [
                {
                    "step": HOOK_BACKEND,
                    "dependsOn": [{"step": NS, "rule": "namespace", "orderOnly": True}],
                }
            ],
        ]
    }
    assert plan_graph(plan) == Graph({NS: [], HOOK_BACKEND: [(NS, True)]}, {NS: ("", "Namespace", "", "cert-manager")})


def test_a_workload_mounting_a_certificates_secret_begins_when_the_certificate_is_ready() -> None:
    """kfctl applies the workload as soon as the Certificate is applied (order only), but its pods start only once
    the Secret exists: on the path the Certificate's readiness gates it, so the Certificate's wait is counted."""
    plan = {
        "waves": [
            [{"step": CERT, "object": {"kind": "Certificate", "namespace": "kubeflow", "name": "serving-cert"}}],
            [
                {
                    "step": KSERVE,
                    "dependsOn": [
                        {"step": CERT, "rule": "mounts-certificate", "orderOnly": True},
                        {"step": CM, "rule": "app-config", "orderOnly": True},
                    ],
                }
            ],
        ]
    }
    assert plan_graph(plan).deps[KSERVE] == [(CERT, False), (CM, True)]
