"""The run's loop sleeps until the next check or retry is due, whether or not work is in flight (issue 50 item 5):
before, a check due in 30 ms waited up to 0.2 s while any apply or check was out — the scheduling latency bench S
measures. A fake clock fixes "now"; the inbox records how long the loop would block."""

from __future__ import annotations

import heapq
import queue
from concurrent.futures import Future
from typing import Any, cast

import pytest
from fakecluster import obj

from kfctl.engine.result import ApplyOptions, ApplyResult
from kfctl.engine.schedule import BUSY_WAKE, IDLE_WAKE, Run
from kfctl.plan.graph import build_plan

NOW = 1000.0


class RecordingInbox:
    """Nothing ever arrives; each blocking read records its timeout."""

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def get(self, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        raise queue.Empty

    def get_nowait(self) -> Any:
        raise queue.Empty


def sleep_of(*, in_flight: bool, check_in: float | None, retry_in: float | None) -> float | None:
    plan = build_plan([("app", [obj("v1", "ConfigMap", "c", "ns")])], depends_on={})
    inbox = RecordingInbox()
    run = Run(
        plan,
        options=ApplyOptions(),
        result=ApplyResult(),
        report=lambda _e: None,
        workers=cast(Any, None),  # never reached: the loop only sleeps here
        pool=cast(Any, None),
        watches=cast(Any, None),
        inbox=cast(Any, inbox),
        clock=lambda: NOW,
    )
    if in_flight:
        run.in_flight[Future()] = cast(Any, "an apply")
    if check_in is not None:
        heapq.heappush(run.checks, (NOW + check_in, 0))
    if retry_in is not None:
        heapq.heappush(run.retries, (NOW + retry_in, 0))
    assert run._next_messages(NOW) == []
    (timeout,) = inbox.timeouts
    return timeout


@pytest.mark.parametrize(
    ("in_flight", "check_in", "retry_in", "sleeps"),
    [
        # work in flight: the next due check or retry wakes the loop (the fix), else the worker's return
        (True, 0.03, None, 0.03),
        (True, None, 0.1, 0.1),
        (True, 0.15, 0.07, 0.07),
        (True, 0.0, None, 0.0),
        (True, -1.0, None, 0.0),  # overdue: no sleep
        (True, 5.0, None, BUSY_WAKE),
        (True, None, None, BUSY_WAKE),
        # nothing in flight: as before
        (False, 0.03, None, 0.03),
        (False, None, 0.01, 0.01),
        (False, 5.0, None, IDLE_WAKE),
        (False, None, None, IDLE_WAKE),
    ],
)
def test_the_loop_sleeps_until_the_next_check_or_retry_is_due(
    in_flight: bool, check_in: float | None, retry_in: float | None, sleeps: float
) -> None:
    assert sleep_of(in_flight=in_flight, check_in=check_in, retry_in=retry_in) == pytest.approx(sleeps)


def test_the_wake_caps_are_what_the_loop_promises() -> None:
    assert (BUSY_WAKE, IDLE_WAKE) == (0.2, 0.05)
