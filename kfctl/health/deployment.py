"""Deployment: kubectl's rollout-status logic, not Helm's replicas-minus-maxUnavailable shortcut."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, condition, explain, failed, not_observed, progressing, ready, status_of


def deployment(obj: Mapping[str, Any]) -> Health:
    pending = not_observed(obj, required=True)
    if pending:
        return pending
    status = status_of(obj)
    progress = condition(obj, "Progressing")
    if progress and progress.get("reason") == "ProgressDeadlineExceeded":
        return failed(f"rollout stuck: {explain(progress)}")
    spec = obj.get("spec") or {}
    want = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas") or 0)
    total = int(status.get("replicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    if updated < want:
        return progressing(f"{updated}/{want} replicas updated, {available}/{want} available")
    if total > updated:
        return progressing(f"{total - updated} old replica(s) pending termination")
    if available < updated:
        return progressing(f"{available}/{want} available")
    return ready(f"{available}/{want} available")
