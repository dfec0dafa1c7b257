"""Job health: Complete or Failed conditions."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.job import job
from kfctl.health.model import Health

CASES = [
    pytest.param("status: {active: 1}", Health("progressing", "1 active, 0 succeeded"), id="running"),
    pytest.param("status: {conditions: [{type: Complete, status: 'True'}]}", Health("ready", "complete"), id="done"),
    pytest.param(
        "status: {conditions: [{type: Failed, status: 'True', reason: BackoffLimitExceeded,"
        " message: Job has reached the specified backoff limit}]}",
        Health("failed", "job failed: BackoffLimitExceeded: Job has reached the specified backoff limit"),
        id="failed",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_job(manifest: str, expected: Health) -> None:
    assert job(yaml.safe_load(manifest)) == expected
