"""Generic custom resources: Ready/Available conditions, Stalled fails, and a grace window for silence."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.custom import GRACE_SECONDS, custom_resource
from kfctl.health.model import Health

CASES = [
    pytest.param("{}", 0.0, Health("progressing", "waiting for its controller to report status"), id="fresh-silent"),
    pytest.param("{}", GRACE_SECONDS + 1, Health("ready", "no status reported"), id="silent-after-grace"),
    pytest.param("status: {conditions: [{type: Ready, status: 'True'}]}", 0.0, Health("ready", "ready"), id="ready"),
    pytest.param(
        "status: {conditions: [{type: Ready, status: 'False', reason: Pending, message: waiting for model}]}",
        99.0,
        Health("progressing", "not ready: Pending: waiting for model"),
        id="not-ready",
    ),
    pytest.param(
        "status: {conditions: [{type: Available, status: 'True'}]}", 0.0, Health("ready", "available"), id="available"
    ),
    pytest.param(
        "status: {conditions: [{type: Stalled, status: 'True', reason: InvalidSpec, message: bad storageUri}]}",
        0.0,
        Health("failed", "stalled: InvalidSpec: bad storageUri"),
        id="stalled",
    ),
    pytest.param(
        "status: {phase: Running}", 0.0, Health("ready", "status reported, no Ready condition"), id="other-status"
    ),
]


@pytest.mark.parametrize(("manifest", "age", "expected"), CASES)
def test_custom_resource(manifest: str, age: float, expected: Health) -> None:
    assert custom_resource(yaml.safe_load(manifest), age_seconds=age) == expected
