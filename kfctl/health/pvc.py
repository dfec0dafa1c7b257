"""PersistentVolumeClaim: Bound, or Pending on a WaitForFirstConsumer class (it binds when a pod uses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, failed, progressing, ready, status_of


def pvc(obj: Mapping[str, Any], *, wait_for_first_consumer: bool = False) -> Health:
    phase = status_of(obj).get("phase")
    if phase == "Bound":
        return ready("bound")
    if phase == "Lost":
        return failed("claim lost its volume")
    if wait_for_first_consumer:
        return ready("pending until a pod uses it (WaitForFirstConsumer)")
    return progressing(f"{phase or 'Pending'}: waiting for a volume")
