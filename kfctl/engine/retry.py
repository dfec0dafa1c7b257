"""How long to wait before the next try, and the one retry loop for calls outside the scheduler.

Which failures are worth retrying is decided where they are met, at the k8s boundary: a
:class:`~kfctl.k8s.errors.Transient` is (a restarting API server, throttling, a kind not served yet …), anything
else is final (:mod:`kfctl.k8s.errors` says which answer is which, and why).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kfctl.k8s.errors import ApiError, KubeError, Transient, Unreachable


def backoff(attempt: int, *, retry_after: float | None = None, cap: float = 10.0) -> float:
    """Seconds before retry number ``attempt`` (1-based): 0.5, 1, 2, 4 … capped; Retry-After wins."""
    if retry_after is not None:
        return max(0.0, min(retry_after, 60.0))
    return float(min(cap, 0.5 * 2 ** max(0, attempt - 1)))


T = TypeVar("T")


def retry_transient(
    fn: Callable[[], T],
    *,
    deadline: float,
    cap: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[KubeError, float], None] | None = None,
    give_up: Callable[[BaseException], bool] = lambda _e: False,
) -> T:
    """``fn()``, retried with backoff while it fails transiently and ``deadline`` (on ``clock``) allows.

    The one retry loop for calls outside the scheduler (inventory reads and writes, prune and delete), so
    that a restarting API server is ridden out the same way everywhere. ``give_up`` stops early on an error
    that is transient in general but final for this caller (a failed UID precondition).
    """
    attempt = 0
    while True:
        try:
            return fn()
        except (ApiError, Unreachable) as e:
            attempt += 1
            if give_up(e) or not isinstance(e, Transient) or clock() > deadline:
                raise
            delay = backoff(attempt, retry_after=e.retry_after, cap=cap)
            if on_retry is not None:
                on_retry(e, delay)
            sleep(delay)
