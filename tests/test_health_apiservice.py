"""APIService health: Available=True."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.apiservice import apiservice
from kfctl.health.model import Health

CASES = [
    pytest.param("status: {}", Health("progressing", "waiting for Available"), id="fresh"),
    pytest.param(
        "status: {conditions: [{type: Available, status: 'False', reason: MissingEndpoints,"
        " message: endpoints for service/metrics-server in kube-system have no addresses}]}",
        Health(
            "progressing",
            "not available: MissingEndpoints: endpoints for service/metrics-server in kube-system have no addresses",
        ),
        id="no-endpoints",
    ),
    pytest.param("status: {conditions: [{type: Available, status: 'True'}]}", Health("ready", "available"), id="ok"),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_apiservice(manifest: str, expected: Health) -> None:
    assert apiservice(yaml.safe_load(manifest)) == expected
