"""StatefulSet: every replica ready and the rollout finished (current revision == update revision, or with a
partition: every pod at or above it updated)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, not_observed, progressing, ready, status_of


def statefulset(obj: Mapping[str, Any]) -> Health:
    pending = not_observed(obj, required=True)
    if pending:
        return pending
    status = status_of(obj)
    spec = obj.get("spec") or {}
    want = int(spec.get("replicas", 1))
    ready_n = int(status.get("readyReplicas") or 0)
    if ready_n < want:
        return progressing(f"{ready_n}/{want} ready")
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return ready(f"{ready_n}/{want} ready")  # OnDelete: pods move to the new revision when deleted
    updated = int(status.get("updatedReplicas") or 0)
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
    if partition > 0:
        # Pods below the partition keep the old revision on purpose, so the revisions never meet (kubectl's
        # rollout status: done when the pods at or above the partition are updated).
        if updated < want - partition:
            return progressing(f"partitioned rolling update: {updated}/{want - partition} updated")
        return ready(f"{ready_n}/{want} ready, {updated} updated (partition {partition})")
    if status.get("updateRevision") != status.get("currentRevision"):
        return progressing(f"rolling update: {updated}/{want} on revision {status.get('updateRevision')}")
    return ready(f"{ready_n}/{want} ready")
