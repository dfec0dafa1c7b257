"""StatefulSet health: all replicas ready and the rolling update finished."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.model import Health
from kfctl.health.statefulset import statefulset

CASES = [
    pytest.param(
        "spec: {replicas: 3}\nstatus: {readyReplicas: 1}",
        Health("progressing", "1/3 ready"),
        id="starting",
    ),
    pytest.param(
        "spec: {replicas: 2}\nstatus: {readyReplicas: 2, updatedReplicas: 1, currentRevision: a, updateRevision: b}",
        Health("progressing", "rolling update: 1/2 on revision b"),
        id="rolling-update",
    ),
    pytest.param(
        "spec: {replicas: 2, updateStrategy: {type: OnDelete}}\n"
        "status: {readyReplicas: 2, currentRevision: a, updateRevision: b}",
        Health("ready", "2/2 ready"),
        id="on-delete-ignores-revisions",
    ),
    pytest.param(
        "spec: {replicas: 2}\nstatus: {readyReplicas: 2, currentRevision: a, updateRevision: a}",
        Health("ready", "2/2 ready"),
        id="ready",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_statefulset(manifest: str, expected: Health) -> None:
    assert statefulset(yaml.safe_load(manifest)) == expected
