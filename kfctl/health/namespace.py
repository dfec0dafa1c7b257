"""Namespace: Active. A Terminating namespace is progressing; the engine's timeout turns it into a failure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, progressing, ready, status_of
from kfctl.objects import meta_of


def namespace(obj: Mapping[str, Any]) -> Health:
    phase = status_of(obj).get("phase")
    if phase == "Terminating" or meta_of(obj).get("deletionTimestamp"):
        return progressing("namespace is being terminated")
    if phase == "Active":
        return ready("active")
    return progressing(f"phase {phase or 'unknown'}")
