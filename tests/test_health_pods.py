"""Pod diagnosis: the root cause phrases at the end of a failure chain."""

from __future__ import annotations

import yaml

from kfctl.health.pods import pod_problems


def test_unschedulable_pod_is_named_with_the_scheduler_message() -> None:
    pod = yaml.safe_load(
        """
        status:
          conditions:
          - {type: PodScheduled, status: "False", reason: Unschedulable,
             message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}
        """
    )
    assert pod_problems([pod]) == [
        "Unschedulable: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    ]


def test_image_pull_backoff_and_crash_loop_name_the_container() -> None:
    pods = yaml.safe_load(
        """
        - status:
            containerStatuses:
            - name: manager
              state: {waiting: {reason: ImagePullBackOff, message: Back-off pulling image "x:1"}}
        - status:
            containerStatuses:
            - name: manager
              state: {waiting: {reason: CrashLoopBackOff}}
        """
    )
    assert pod_problems(pods) == [
        'ImagePullBackOff: container manager: Back-off pulling image "x:1"',
        "CrashLoopBackOff: container manager",
    ]


def test_failed_scheduling_event_counts_when_conditions_are_silent() -> None:
    event = {"type": "Warning", "reason": "FailedScheduling", "message": "0/1 nodes are available"}
    assert pod_problems([{"status": {}}], [event]) == ["Unschedulable: 0/1 nodes are available"]


def test_healthy_pods_have_no_problems() -> None:
    assert pod_problems([{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}]) == []
