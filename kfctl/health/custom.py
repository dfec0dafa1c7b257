"""Generic custom resource: kstatus-style conditions, with a grace window for a controller to speak.

A fresh object with no status is not yet healthy: its controller may simply not have seen it. After the
grace window, an object whose kind reports no conditions at all is taken as ready (many CRDs, e.g.
ClusterServingRuntime, have no status), and the message says that nothing was reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import (
    Health,
    condition,
    explain,
    failed,
    is_true,
    not_observed,
    progressing,
    ready,
    status_of,
)

GRACE_SECONDS = 3.0


def custom_resource(obj: Mapping[str, Any], *, age_seconds: float) -> Health:
    pending = not_observed(obj)
    if pending:
        return pending
    if is_true(obj, "Stalled"):
        return failed(f"stalled: {explain(condition(obj, 'Stalled'))}")
    for kind in ("Ready", "Available"):
        c = condition(obj, kind)
        if c is None:
            continue
        if c.get("status") == "True":
            return ready(kind.lower())
        why = explain(c)
        return progressing(f"not {kind.lower()}: {why}" if why else f"waiting for {kind}")
    if is_true(obj, "Reconciling"):
        return progressing(f"reconciling: {explain(condition(obj, 'Reconciling'))}")
    if status_of(obj):
        return ready("status reported, no Ready condition")
    if age_seconds < GRACE_SECONDS:
        return progressing("waiting for its controller to report status")
    return ready("no status reported")
