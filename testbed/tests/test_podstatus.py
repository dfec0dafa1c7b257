"""kfctl_testbed.podstatus's pure parts: the container statuses and Ready conditions the runtime writes, as a
kubelet writes them."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

import pytest
from kfctl_testbed import podstatus
from kfctl_testbed.podstatus import Termination

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
CONTAINER = {
    "name": "manager",
    "image": "kserve/kserve-controller:v0.16.0",
    "ports": [{"name": "webhook", "containerPort": 9443}],
}


@dataclass
class Process:
    """A podstatus.ContainerProcess without a process."""

    proc: subprocess.Popen[bytes] | None = None
    relay: Any = None
    started: float = 0.0
    started_at: float = T0
    restarts: int = 0
    last_exit: Termination | None = None


@pytest.mark.parametrize(
    ("port", "number"),
    [
        pytest.param(8080, 8080, id="number"),
        pytest.param("8080", 8080, id="digits"),
        pytest.param("webhook", 9443, id="named"),
    ],
)
def test_container_port(port: int | str, number: int) -> None:
    assert podstatus.container_port(port, CONTAINER) == number


def test_an_unknown_port_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="container 'manager' has no port named 'metrics'"):
        podstatus.container_port("metrics", CONTAINER)


@pytest.mark.parametrize(
    ("returncode", "exit_code", "reason"),
    [
        pytest.param(0, 0, "Completed", id="success"),
        pytest.param(2, 2, "Error", id="failure"),
        pytest.param(-9, 137, "Error", id="sigkill-is-128-plus-9"),
        pytest.param(-15, 143, "Error", id="sigterm"),
    ],
)
def test_termination(returncode: int, exit_code: int, reason: str) -> None:
    ended = Termination.of(returncode, started_at=T0, finished_at=T0 + 61)
    assert ended.as_state() == {
        "terminated": {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": "2023-11-14T22:13:20Z",
            "finishedAt": "2023-11-14T22:14:21Z",
        }
    }


@pytest.mark.parametrize(
    ("running", "ready", "process", "state", "last_state"),
    [
        pytest.param(True, True, Process(), {"running": {"startedAt": "2023-11-14T22:13:20Z"}}, {}, id="running"),
        pytest.param(False, False, Process(), {"waiting": {"reason": "ContainerCreating"}}, {}, id="starting"),
        pytest.param(
            False,
            False,
            Process(restarts=3, last_exit=Termination(1, T0, T0 + 1)),
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}},
            Termination(1, T0, T0 + 1).as_state(),
            id="crash-looping",
        ),
    ],
)
def test_process_status(
    running: bool, ready: bool, process: Process, state: dict[str, Any], last_state: dict[str, Any]
) -> None:
    assert podstatus.process_status(CONTAINER, process, running=running, ready=ready) == {
        "name": "manager",
        "image": CONTAINER["image"],
        "ready": ready,
        "started": running,
        "restartCount": process.restarts,
        "state": state,
        "lastState": last_state,
    }


def test_pull_error_status() -> None:
    status = podstatus.pull_error_status(CONTAINER, "no binary built")
    assert status["state"] == {"waiting": {"reason": "ErrImagePull", "message": "no binary built"}}
    assert (status["ready"], status["started"]) == (False, False)


def status(name: str, *, ready: bool) -> dict[str, Any]:
    return {"name": name, "ready": ready}


def pod(*, gates: tuple[str, ...] = (), conditions: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "spec": {"readinessGates": [{"conditionType": g} for g in gates]},
        "status": {"conditions": [{"type": t, "status": s} for t, s in (conditions or {}).items()]},
    }


READY_TRUE = {"status": "True", "reason": None, "message": None}


@pytest.mark.parametrize(
    ("the_pod", "statuses", "containers_ready", "ready"),
    [
        pytest.param(pod(), [status("a", ready=True)], READY_TRUE, READY_TRUE, id="all-ready"),
        pytest.param(
            pod(),
            [status("a", ready=True), status("b", ready=False), status("c", ready=False)],
            {"status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [b c]"},
            {"status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [b c]"},
            id="unready-containers",
        ),
        pytest.param(
            pod(gates=("example.com/gate", "other/gate"), conditions={"other/gate": "True"}),
            [status("a", ready=True)],
            READY_TRUE,
            {
                "status": "False",
                "reason": "ReadinessGatesNotReady",
                "message": "readiness gates not True: [example.com/gate]",
            },
            id="a-readiness-gate-not-true",
        ),
        pytest.param(
            pod(gates=("example.com/gate",), conditions={"example.com/gate": "True"}),
            [status("a", ready=True)],
            READY_TRUE,
            READY_TRUE,
            id="readiness-gates-true",
        ),
    ],
)
def test_readiness_conditions(
    the_pod: dict[str, Any], statuses: list[dict[str, Any]], containers_ready: dict[str, Any], ready: dict[str, Any]
) -> None:
    assert podstatus.readiness_conditions(the_pod, statuses) == [
        {"type": "ContainersReady", **containers_ready},
        {"type": "Ready", **ready},
    ]


def test_differs_ignores_condition_times_only() -> None:
    statuses = [podstatus.simulated_status(CONTAINER, {"status": {"startTime": "2023-11-14T22:13:20Z"}})]
    conditions = podstatus.readiness_conditions(pod(), statuses)
    written = {
        "spec": {},
        "status": {
            "conditions": [{**c, "lastTransitionTime": "2023-11-14T22:13:21Z"} for c in conditions],
            "containerStatuses": [{**s, "containerID": "runtime://x"} for s in statuses],
        },
    }
    assert not podstatus.differs(written, conditions, statuses)
    unready = [{**statuses[0], "ready": False}]
    assert podstatus.differs(written, podstatus.readiness_conditions(pod(), unready), unready)
    assert podstatus.differs(written, conditions, unready)
    assert podstatus.differs({"spec": {}}, conditions, statuses)
