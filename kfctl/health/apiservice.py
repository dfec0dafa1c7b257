"""APIService: Available, meaning the aggregated API answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, condition, explain, is_true, progressing, ready


def apiservice(obj: Mapping[str, Any]) -> Health:
    if is_true(obj, "Available"):
        return ready("available")
    why = explain(condition(obj, "Available"))
    return progressing(f"not available: {why}" if why else "waiting for Available")
