"""Which API failures are worth retrying, and how long to wait before the next try.

Transient: 429 (honouring Retry-After), 5xx, connection errors, "failed calling webhook", "no endpoints
available", a kind not (yet) served after a mapping refresh (or a 404 for it), a namespace being terminated
or not there yet. Everything else
— schema errors (422), RBAC (403), webhook *denials* — fails at once: retrying cannot help.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from kfctl.k8s.api import ApiError, NoKindMatch, Unreachable

Verdict = Literal["transient", "denied", "immutable", "fatal"]

_TRANSIENT_TEXT = (
    "failed calling webhook",
    "no endpoints available",
    "connection refused",
    "the server is currently unable to handle the request",
    "is being terminated",
    "because it is being terminated",
    "etcdserver: request timed out",
    "the object has been modified",
    "context deadline exceeded",
)
_DENIAL = re.compile(r'admission webhook "[^"]+" denied the request')


@dataclass(frozen=True)
class Classified:
    verdict: Verdict
    message: str
    retry_after: float | None = None
    fields: tuple[str, ...] = ()  # immutable field paths


def classify(err: BaseException) -> Classified:
    if isinstance(err, Unreachable):
        return Classified("transient", f"cannot reach the API server: {err}")
    if isinstance(err, NoKindMatch):
        return Classified("transient", str(err))
    if not isinstance(err, ApiError):
        return Classified("fatal", f"{type(err).__name__}: {err}")
    text = err.message
    if _DENIAL.search(text):
        return Classified("denied", text)
    if err.status == 429:
        return Classified("transient", f"throttled: {text}", retry_after=err.retry_after)
    if any(t in text for t in _TRANSIENT_TEXT) or err.status >= 500 or err.status == 409:
        return Classified("transient", text, retry_after=err.retry_after)
    if err.status == 404:
        # Apply creates what is missing, so a 404 means the place is not there yet: its namespace (made by
        # someone else), or a kind whose CRD was just Established but whose handler the API server has not
        # started ("the server could not find the requested resource").
        return Classified("transient", text)
    if err.status == 422 and "immutable" in text:
        fields = tuple(str(c.get("field")) for c in err.causes if "immutable" in str(c.get("message", "")))
        return Classified("immutable", text, fields=fields or ("?",))
    return Classified("denied" if err.status in (400, 401, 403, 405, 415, 422) else "fatal", text)


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
    on_retry: Callable[[Classified, float], None] | None = None,
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
            c = classify(e)
            attempt += 1
            if give_up(e) or c.verdict != "transient" or clock() > deadline:
                raise
            delay = backoff(attempt, retry_after=c.retry_after, cap=cap)
            if on_retry is not None:
                on_retry(c, delay)
            sleep(delay)
