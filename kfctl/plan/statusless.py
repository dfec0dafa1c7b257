"""Custom resources that can never report a status: applied is all there is to wait for.

A kind whose CRD (in the same bundle) has, in every version, no ``status`` in its schema — or a ``status`` that
can hold nothing (an object with no properties, unknown fields pruned) — will never get conditions from any
controller: the API server prunes whatever one writes. ClusterServingRuntime, ClusterTrainingRuntime and Argo's
WorkflowTemplate are such kinds. Waiting out the health rule's grace window for them (a controller "may not have
spoken yet") only adds seconds to every install's tail, so the planner marks them as not waited for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kfctl.objects import Obj


def statusless_kinds(objects: Iterable[Obj]) -> frozenset[tuple[str, str]]:
    """(group, kind) of every CRD among ``objects`` whose versions all lack a status that could hold anything."""
    out: set[tuple[str, str]] = set()
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition" or not str(obj.get("apiVersion", "")).startswith(
            "apiextensions.k8s.io/"
        ):
            continue
        if holds_no_status(obj):
            spec = obj.get("spec") or {}
            out.add((str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))))
    return frozenset(out)


def holds_no_status(crd: Mapping[str, Any]) -> bool:
    """True when no version of this CRD can keep a status a controller writes (the API server prunes it)."""
    versions = (crd.get("spec") or {}).get("versions") or []
    return bool(versions) and not any(_can_hold_status(v) for v in versions)


def _can_hold_status(version: Mapping[str, Any]) -> bool:
    schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or None
    if not isinstance(schema, Mapping):
        return True  # no schema known: anything may be there
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return True
    status = (schema.get("properties") or {}).get("status")
    if status is None:
        return False
    if not isinstance(status, Mapping):
        return True
    return bool(
        status.get("properties")
        or status.get("additionalProperties", False) is not False
        or status.get("x-kubernetes-preserve-unknown-fields")
        or status.get("type") not in ("object", None)
    )
