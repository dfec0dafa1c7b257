"""DaemonSet health: updated == available == desired; zero desired is said plainly."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.daemonset import daemonset
from kfctl.health.model import Health

CASES = [
    pytest.param("status: {}", Health("progressing", "waiting for the controller to report status"), id="no-status"),
    pytest.param(
        "status: {desiredNumberScheduled: 3, updatedNumberScheduled: 1, numberAvailable: 1}",
        Health("progressing", "1/3 nodes updated"),
        id="updating",
    ),
    pytest.param(
        "status: {desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2}",
        Health("progressing", "2/3 nodes available"),
        id="not-all-available",
    ),
    pytest.param(
        "status: {desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}",
        Health("ready", "3/3 nodes available"),
        id="ready",
    ),
    pytest.param(
        "status: {desiredNumberScheduled: 0, updatedNumberScheduled: 0, numberAvailable: 0}",
        Health("ready", "no node matches its selector (0 scheduled)"),
        id="no-matching-node",
    ),
    pytest.param(
        "metadata: {generation: 2}\n"
        "status: {observedGeneration: 1, desiredNumberScheduled: 0, updatedNumberScheduled: 0, numberAvailable: 0}",
        Health("progressing", "waiting for the controller to observe generation 2 (seen 1)"),
        id="stale-status-is-not-no-matching-node",
    ),
    pytest.param(  # the API server's answer to the create: zero counts, but no controller has looked yet
        "metadata: {generation: 1}\n"
        "status: {currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0}",
        Health("progressing", "waiting for the controller to observe generation 1 (no status yet)"),
        id="just-created-is-not-no-matching-node",
    ),
    pytest.param(
        "metadata: {generation: 1}\n"
        "status: {observedGeneration: 1, currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0,"
        " numberReady: 0}",
        Health("ready", "no node matches its selector (0 scheduled)"),
        id="observed-no-matching-node",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_daemonset(manifest: str, expected: Health) -> None:
    assert daemonset(yaml.safe_load(manifest)) == expected
