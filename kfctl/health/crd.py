"""CustomResourceDefinition: usable once Established and NamesAccepted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, condition, explain, failed, is_false, is_true, progressing, ready


def crd(obj: Mapping[str, Any]) -> Health:
    if is_false(obj, "NamesAccepted"):
        return failed(f"names not accepted: {explain(condition(obj, 'NamesAccepted'))}")
    if is_true(obj, "Established") and is_true(obj, "NamesAccepted"):
        return ready("established")
    if not is_true(obj, "NamesAccepted"):
        return progressing("waiting for NamesAccepted")
    return progressing("waiting for Established")
