"""Job: Complete or Failed, from its conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, condition, explain, failed, is_true, progressing, ready, status_of


def job(obj: Mapping[str, Any]) -> Health:
    if is_true(obj, "Failed"):
        return failed(f"job failed: {explain(condition(obj, 'Failed'))}")
    if is_true(obj, "Complete"):
        return ready("complete")
    status = status_of(obj)
    return progressing(f"{int(status.get('active') or 0)} active, {int(status.get('succeeded') or 0)} succeeded")
