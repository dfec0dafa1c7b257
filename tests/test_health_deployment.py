"""Deployment health is kubectl's rollout status: updated == replicas == available, per generation."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.deployment import deployment
from kfctl.health.model import Health

CASES = [
    pytest.param(
        """
        metadata: {generation: 2}
        spec: {replicas: 2}
        status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2}
        """,
        Health("progressing", "waiting for the controller to observe generation 2 (seen 1)"),
        id="new-spec-not-observed",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 3}
        status: {observedGeneration: 1, replicas: 3, updatedReplicas: 1, availableReplicas: 2}
        """,
        Health("progressing", "1/3 replicas updated, 2/3 available"),
        id="rolling",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 2}
        status: {observedGeneration: 1, replicas: 3, updatedReplicas: 2, availableReplicas: 2}
        """,
        Health("progressing", "1 old replica(s) pending termination"),
        id="old-replicas-terminating",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 1}
        status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 0}
        """,
        Health("progressing", "0/1 available"),
        id="not-available-yet",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 1}
        status:
          observedGeneration: 1
          conditions:
          - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded,
             message: ReplicaSet "web-1" has timed out progressing.}
        """,
        Health("failed", 'rollout stuck: ProgressDeadlineExceeded: ReplicaSet "web-1" has timed out progressing.'),
        id="progress-deadline-exceeded",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 2}
        status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2}
        """,
        Health("ready", "2/2 available"),
        id="available",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {}
        status: {observedGeneration: 1}
        """,
        Health("progressing", "0/1 replicas updated, 0/1 available"),
        id="replicas-default-to-one",
    ),
    pytest.param(  # what the API server returns from the create: no controller has looked at it yet
        """
        metadata: {generation: 1}
        spec: {replicas: 2}
        status: {}
        """,
        Health("progressing", "waiting for the controller to observe generation 1 (no status yet)"),
        id="just-created-empty-status",
    ),
    pytest.param(  # the same, scaled to zero: 0 of 0 is not "ready" until the controller has seen it
        """
        metadata: {generation: 1}
        spec: {replicas: 0}
        status: {}
        """,
        Health("progressing", "waiting for the controller to observe generation 1 (no status yet)"),
        id="scaled-to-zero-just-created",
    ),
    pytest.param(
        """
        metadata: {generation: 3}
        spec: {replicas: 0}
        status: {observedGeneration: 2, replicas: 0}
        """,
        Health("progressing", "waiting for the controller to observe generation 3 (seen 2)"),
        id="scaled-to-zero-not-yet-observed",
    ),
    pytest.param(
        """
        metadata: {generation: 1}
        spec: {replicas: 0}
        status: {observedGeneration: 1}
        """,
        Health("ready", "0/0 available"),
        id="scaled-to-zero",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_deployment(manifest: str, expected: Health) -> None:
    assert deployment(yaml.safe_load(manifest)) == expected
