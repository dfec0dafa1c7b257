"""A custom resource whose CRD can hold no status is not waited for: nothing could ever report it ready."""

from __future__ import annotations

from typing import Any, cast

import pytest
from fakecluster import FakeCluster, established

from kfctl.engine.probe import object_health
from kfctl.k8s.api import Cluster
from kfctl.objects import key_of
from kfctl.plan.graph import build_plan, object_id
from kfctl.plan.statusless import statusless_kinds


def crd(kind: str, *schemas: dict[str, Any] | None) -> dict[str, Any]:
    versions = [
        {"name": f"v{i + 1}", "served": True, "storage": i == 0, **({"schema": {"openAPIV3Schema": s}} if s else {})}
        for i, s in enumerate(schemas)
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.example.com"},
        "spec": {"group": "example.com", "names": {"kind": kind, "plural": f"{kind.lower()}s"}, "versions": versions},
    }


SPEC_ONLY = {"type": "object", "properties": {"spec": {"type": "object"}}}
EMPTY_STATUS = {"type": "object", "properties": {"spec": {"type": "object"}, "status": {"type": "object"}}}
CONDITIONS = {"type": "object", "properties": {"status": {"type": "object", "properties": {"conditions": {}}}}}
OPEN_STATUS = {
    "type": "object",
    "properties": {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
}
OPEN_ROOT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
MAP_STATUS = {"type": "object", "properties": {"status": {"type": "object", "additionalProperties": {}}}}


@pytest.mark.parametrize(
    ("schemas", "statusless"),
    [
        ((SPEC_ONLY,), True),  # ClusterTrainingRuntime, WorkflowTemplate: no status at all
        ((EMPTY_STATUS,), True),  # ClusterServingRuntime: `status: {type: object}`, pruned to {}
        ((EMPTY_STATUS, SPEC_ONLY), True),  # no version can hold one
        ((CONDITIONS,), False),
        ((OPEN_STATUS,), False),
        ((OPEN_ROOT,), False),
        ((MAP_STATUS,), False),
        ((SPEC_ONLY, CONDITIONS), False),  # one version can: its controller may report there
        ((None,), False),  # no schema: nothing is known
    ],
)
def test_which_kinds_can_never_report_a_status(schemas: tuple[dict[str, Any] | None, ...], statusless: bool) -> None:
    found = statusless_kinds([crd("Runtime", *schemas)])
    assert found == ({("example.com", "Runtime")} if statusless else set())


def test_the_plan_does_not_wait_for_them_and_still_waits_for_the_rest() -> None:
    runtime = {"apiVersion": "example.com/v1", "kind": "Runtime", "metadata": {"name": "r"}}
    job = {"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}
    objects = [crd("Runtime", EMPTY_STATUS), crd("Job", CONDITIONS), runtime, job]
    plan = build_plan([("app", objects)], depends_on={})
    assert plan.steps[object_id(key_of(runtime))].wait is False
    assert plan.steps[object_id(key_of(job))].wait is True
    # The CRD itself is still waited for (Established), and the custom resource still waits for it.
    assert plan.steps[object_id(key_of(objects[0]))].wait is True
    assert object_id(key_of(objects[0])) in {e.dependency for e in plan.deps[object_id(key_of(runtime))]}


@pytest.mark.parametrize(
    ("schema", "state", "message"),
    [
        (EMPTY_STATUS, "ready", "applied (its CRD has no status for a controller to report)"),
        (SPEC_ONLY, "ready", "applied (its CRD has no status for a controller to report)"),
        (CONDITIONS, "progressing", "waiting for its controller to report status"),
    ],
)
def test_status_and_check_judge_a_fresh_one_as_apply_did(schema: dict[str, Any], state: str, message: str) -> None:
    """`kfctl status` right after an apply sees the object inside the grace window; it must agree with apply,
    which did not wait for it."""
    cluster = FakeCluster()
    definition = crd("Runtime", schema)
    established(definition)
    cluster.put(definition)
    live = cluster.put({"apiVersion": "example.com/v1", "kind": "Runtime", "metadata": {"name": "r"}})
    health = object_health(cast(Cluster, cluster), live)
    assert (health.state, health.message) == (state, message)
