"""Service: has a cluster IP (headless and ExternalName services are ready as applied)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kfctl.health.model import Health, progressing, ready


def service(obj: Mapping[str, Any]) -> Health:
    spec = obj.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return ready(f"external name {spec.get('externalName', '')}")
    ip = spec.get("clusterIP")
    if ip == "None":
        return ready("headless")
    if ip:
        return ready(f"cluster IP {ip}")
    return progressing("waiting for a cluster IP")
