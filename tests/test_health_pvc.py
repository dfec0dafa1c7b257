"""PVC health: Bound; Pending is fine on a WaitForFirstConsumer class; Lost is a failure."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.model import Health
from kfctl.health.pvc import pvc

CASES = [
    pytest.param("status: {phase: Bound}", False, Health("ready", "bound"), id="bound"),
    pytest.param("status: {phase: Pending}", False, Health("progressing", "Pending: waiting for a volume"), id="p"),
    pytest.param(
        "status: {phase: Pending}",
        True,
        Health("ready", "pending until a pod uses it (WaitForFirstConsumer)"),
        id="wait-for-first-consumer",
    ),
    pytest.param("status: {phase: Lost}", False, Health("failed", "claim lost its volume"), id="lost"),
]


@pytest.mark.parametrize(("manifest", "wfc", "expected"), CASES)
def test_pvc(manifest: str, wfc: bool, expected: Health) -> None:
    assert pvc(yaml.safe_load(manifest), wait_for_first_consumer=wfc) == expected
