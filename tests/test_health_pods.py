"""Pod diagnosis: the root cause phrases at the end of a failure chain."""

from __future__ import annotations

import pytest
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


EARLIER = {
    "type": "Warning",
    "reason": "FailedScheduling",
    "message": "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims",
    "involvedObject": {"kind": "Pod", "name": "web-1"},
}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            {"metadata": {"name": "web-1"}, "status": {}},
            ["Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims"],
            id="counts-when-conditions-are-silent",
        ),
        pytest.param(
            {
                "metadata": {"name": "web-1"},
                "spec": {"nodeName": "cpu-node-0"},
                "status": {
                    "containerStatuses": [{"name": "web", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
                },
            },
            ["CrashLoopBackOff: container web"],
            id="an-old-warning-of-a-pod-scheduled-since-is-history",
        ),
    ],
)
def test_failed_scheduling_events_count_only_for_pods_still_unscheduled(
    pod: dict[str, object], expected: list[str]
) -> None:
    assert pod_problems([pod], [EARLIER]) == expected


def test_healthy_pods_have_no_problems() -> None:
    assert pod_problems([{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}]) == []
