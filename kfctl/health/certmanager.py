"""cert-manager Certificate, Issuer, ClusterIssuer: the Ready condition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, condition, explain, is_true, not_observed, progressing, ready


def certmanager(obj: Mapping[str, Any]) -> Health:
    pending = not_observed(obj)
    if pending:
        return pending
    if is_true(obj, "Ready"):
        return ready("ready")
    c = condition(obj, "Ready")
    # Ready=False is normal while issuing; the engine's wait timeout turns a lasting False into a failure.
    return progressing(f"not ready: {explain(c)}" if c else "waiting for cert-manager to report Ready")
