"""kfctl_testbed.poll: the one wait loop of the test bed and the e2e tests."""

from __future__ import annotations

import itertools

import pytest
from kfctl_testbed.poll import PollTimeout, poll


def test_returns_the_first_truthy_result() -> None:
    answers = iter([None, [], 0, {"name": "x"}, "never asked"])
    assert poll(lambda: next(answers), timeout=5, what="x", interval=0) == {"name": "x"}
    assert next(answers) == "never asked"


def test_an_error_is_not_yet() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise ConnectionRefusedError("not listening yet")
        return "up"

    assert poll(flaky, timeout=5, what="the server", interval=0) == "up"


def test_timeout_names_what_and_the_last_result() -> None:
    with pytest.raises(PollTimeout) as timed_out:
        poll(lambda: [], timeout=0.05, what="3 Ready nodes", interval=0.01)
    assert str(timed_out.value) == "timed out after 0.05 s waiting for 3 Ready nodes (last result: [])"
    assert timed_out.value.last == []
    assert timed_out.value.error is None


def test_timeout_names_the_last_error_too() -> None:
    answers = itertools.count()

    def check() -> bool:
        if next(answers) == 0:
            return False
        raise KeyError("status")

    with pytest.raises(PollTimeout) as timed_out:
        poll(check, timeout=0.05, what="the Secret", interval=0.01)
    assert str(timed_out.value) == (
        "timed out after 0.05 s waiting for the Secret (last result: False; last error: KeyError: 'status')"
    )


def test_only_errors_give_no_result() -> None:
    def check() -> bool:
        raise OSError("connection refused")

    with pytest.raises(PollTimeout, match=r"waiting for etcd \(last error: OSError: connection refused\)$"):
        poll(check, timeout=0.02, what="etcd", interval=0.01)


def test_a_long_result_is_cut() -> None:
    class Pending:
        def __bool__(self) -> bool:
            return False

        def __repr__(self) -> str:
            return "x" * 3000

    with pytest.raises(PollTimeout) as timed_out:
        poll(Pending, timeout=0, what="w", interval=0)
    assert str(timed_out.value).endswith("x… (3000 chars))")
    assert len(str(timed_out.value)) < 600


def test_asks_at_least_once_and_a_timeout_is_an_assertion() -> None:
    calls = itertools.count()
    with pytest.raises(AssertionError):
        poll(lambda: next(calls) < 0, timeout=0, what="w", interval=0)
    assert next(calls) == 1


def test_passes_ends_the_wait_at_once() -> None:
    calls = itertools.count()

    class Died(Exception):
        pass

    def check() -> bool:
        next(calls)
        raise Died("etcd exited")

    with pytest.raises(Died):
        poll(check, timeout=5, what="etcd", interval=0, passes=(Died,))
    assert next(calls) == 1


def test_pytest_outcomes_are_not_swallowed() -> None:
    """pytest.fail and pytest.skip raise BaseExceptions, which are never "not yet"."""

    def check() -> bool:
        pytest.fail("from inside the check")

    with pytest.raises(pytest.fail.Exception):
        poll(check, timeout=5, what="w", interval=0)
