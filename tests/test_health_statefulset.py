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
    pytest.param(
        "spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}\n"
        "status: {readyReplicas: 3, updatedReplicas: 0, currentRevision: a, updateRevision: b}",
        Health("progressing", "partitioned rolling update: 0/1 updated"),
        id="partition-not-yet-updated",
    ),
    pytest.param(
        "spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}\n"
        "status: {readyReplicas: 3, updatedReplicas: 1, currentRevision: a, updateRevision: b}",
        Health("ready", "3/3 ready, 1 updated (partition 2)"),
        id="partition-done-revisions-differ-on-purpose",
    ),
    pytest.param(
        "metadata: {generation: 2}\nspec: {replicas: 2}\n"
        "status: {observedGeneration: 1, readyReplicas: 2, currentRevision: a, updateRevision: a}",
        Health("progressing", "waiting for the controller to observe generation 2 (seen 1)"),
        id="stale-status",
    ),
    pytest.param(  # the API server's answer to the create, before the controller has looked at it
        "metadata: {generation: 1}\nspec: {replicas: 0}\nstatus: {availableReplicas: 0, replicas: 0}",
        Health("progressing", "waiting for the controller to observe generation 1 (no status yet)"),
        id="just-created-zero-replicas-not-observed",
    ),
    pytest.param(
        "metadata: {generation: 1}\nspec: {replicas: 0}\n"
        "status: {observedGeneration: 1, availableReplicas: 0, replicas: 0, currentRevision: a, updateRevision: a}",
        Health("ready", "0/0 ready"),
        id="zero-replicas-observed",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_statefulset(manifest: str, expected: Health) -> None:
    assert statefulset(yaml.safe_load(manifest)) == expected
