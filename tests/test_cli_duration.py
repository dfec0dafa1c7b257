"""Durations given on the command line (--timeout, --wait-timeout): a table of inputs and verdicts."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kfctl.cli.main import cli
from kfctl.cli.progress import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("1.5s", 1.5)],
    ids=["bare", "seconds", "minutes", "hours-minutes", "fraction"],
)
def test_valid_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.2.3s", "'1.2.3s' is not a duration (e.g. 90s, 5m, 1h)"),
        ("..", "'..' is not a duration (e.g. 90s, 5m, 1h)"),
        ("5x", "'5x' is not a duration (e.g. 90s, 5m, 1h)"),
        ("0s", "'0s' must be positive"),
    ],
    ids=["two-dots", "dots-only", "unknown-unit", "zero"],
)
def test_invalid_durations(text: str, message: str) -> None:
    with pytest.raises(click.BadParameter) as err:
        parse_duration(text)
    assert err.value.message == message


def test_malformed_timeout_is_a_usage_error_not_a_crash(tmp_path: object) -> None:
    result = CliRunner().invoke(cli, ["apply", "--timeout", "1.2.3s", str(tmp_path)])
    assert result.exit_code == 2
    assert "'1.2.3s' is not a duration" in result.output
