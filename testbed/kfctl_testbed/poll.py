"""The test bed's one poll loop: ask again until an answer is truthy or a deadline passes.

Every wait of the test bed and of kfctl's e2e tests goes through `poll` (the e2e tests through
`harness.poll`, which turns a timeout into a test failure; `localcluster.wait_for` adds the logs of the
processes it waits on). It must stay free of pytest and of any cluster: it is a loop, a clock and a message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

NO_ANSWER = object()  # check() has only raised so far
# A repr longer than this (a whole list of objects) is cut in the timeout message.
SHOWN_CHARS = 500


class PollTimeout(AssertionError):
    """`poll` gave up. An AssertionError, so that a test that calls `poll` directly fails rather than errs."""

    def __init__(self, message: str, *, last: object = None, error: BaseException | None = None) -> None:
        super().__init__(message)
        self.last = last  # check()'s last (falsy) result
        self.error = error  # the last exception check() raised, if any did


def poll(
    check: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    passes: tuple[type[BaseException], ...] = (),
) -> T:
    """check()'s first truthy result, asked every `interval` seconds for up to `timeout` seconds (and at least
    once). An exception from check() counts as "not yet", except one of `passes`, which ends the wait at once.
    Raises PollTimeout "timed out after N s waiting for <what> (last result: …; last error: …)"."""
    deadline = time.monotonic() + timeout
    last: object = NO_ANSWER
    error: BaseException | None = None
    while True:
        try:
            result = check()
        except passes:
            raise
        except Exception as e:
            error = e
        else:
            if result:
                return result
            last = result
        if time.monotonic() > deadline:
            message = timeout_message(what, timeout, last, error)
            raise PollTimeout(message, last=None if last is NO_ANSWER else last, error=error)
        time.sleep(interval)


def timeout_message(what: str, timeout: float, last: object, error: BaseException | None) -> str:
    """`timed out after 30 s waiting for <what> (last result: []; last error: ApiError: …)`: the result when
    check() ever returned one, the error when it ever raised."""
    details = [] if last is NO_ANSWER else [f"last result: {_shown_text(repr(last))}"]
    if error is not None:
        details.append(f"last error: {type(error).__name__}: {_shown_text(str(error))}")
    return f"timed out after {timeout:g} s waiting for {what}" + (f" ({'; '.join(details)})" if details else "")


def _shown_text(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"… ({len(text)} chars)"
