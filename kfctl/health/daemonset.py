"""DaemonSet: as many pods updated and available as nodes it should run on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, not_observed, progressing, ready, status_of


def daemonset(obj: Mapping[str, Any]) -> Health:
    pending = not_observed(obj, required=True)
    if pending:
        return pending
    status = status_of(obj)
    if "desiredNumberScheduled" not in status:
        return progressing("waiting for the controller to report status")
    desired = int(status.get("desiredNumberScheduled") or 0)
    updated = int(status.get("updatedNumberScheduled") or 0)
    available = int(status.get("numberAvailable") or 0)
    if desired == 0:
        # Not an error (a GPU plugin on a CPU-only cluster), but not "running everywhere" either: say so.
        return ready("no node matches its selector (0 scheduled)")
    if updated < desired:
        return progressing(f"{updated}/{desired} nodes updated")
    if available < desired:
        return progressing(f"{available}/{desired} nodes available")
    return ready(f"{available}/{desired} nodes available")
