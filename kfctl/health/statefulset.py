"""StatefulSet: every replica ready and the rollout finished (current revision == update revision)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, not_observed, progressing, ready, status_of


def statefulset(obj: Mapping[str, Any]) -> Health:
    pending = not_observed(obj)
    if pending:
        return pending
    status = status_of(obj)
    spec = obj.get("spec") or {}
    want = int(spec.get("replicas", 1))
    ready_n = int(status.get("readyReplicas") or 0)
    if ready_n < want:
        return progressing(f"{ready_n}/{want} ready")
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy == "RollingUpdate" and status.get("updateRevision") != status.get("currentRevision"):
        updated = int(status.get("updatedReplicas") or 0)
        return progressing(f"rolling update: {updated}/{want} on revision {status.get('updateRevision')}")
    return ready(f"{ready_n}/{want} ready")
