"""What a run prints while it works, piped (plain lines) and with -o json: a wait on another run's lock is always
said, naming the holder, or a second `kfctl apply` of the same install looks hung (issue: a run that waits says so)."""

from __future__ import annotations

import io
import json

import pytest

from kfctl.cli.context import GlobalOptions
from kfctl.cli.progress import EventRenderer
from kfctl.engine.events import Event

HELD = "held by kfctl apply demo (host ci-1, pid 4242, since 12:00:01); waiting up to 30s"


@pytest.mark.parametrize(
    ("output", "verbose", "printed"),
    [
        ("text", 0, [f"Waiting    lock: {HELD}"]),  # an object's wait is the live view's, not a plain line
        ("text", 1, [f"Waiting    lock: {HELD}", "Waiting    Deployment.apps kubeflow/web: 0/1 available"]),
        ("json", 0, [{"event": "Waiting", "subject": "lock", "message": HELD}, {"event": "Waiting"}]),
    ],
    ids=["piped", "piped-verbose", "json"],
)
def test_a_wait_on_the_lock_is_printed_in_every_output_mode(output: str, verbose: int, printed: list) -> None:
    stream = io.StringIO()  # not a terminal: plain lines
    with EventRenderer(GlobalOptions(output=output, verbose=verbose), stream=stream) as render:  # type: ignore[arg-type]
        render(Event("Waiting", "lock", HELD, at=0.0))
        render(Event("Waiting", "Deployment.apps kubeflow/web", "0/1 available", app="web", at=0.0))
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(printed)
    for line, want in zip(lines, printed, strict=True):
        if isinstance(want, dict):
            assert want.items() <= json.loads(line).items()
        else:
            assert line.endswith(want), line


def test_quiet_keeps_quiet_about_the_lock_too() -> None:
    stream = io.StringIO()
    with EventRenderer(GlobalOptions(quiet=True), stream=stream) as render:
        render(Event("Waiting", "lock", HELD))
    assert stream.getvalue() == ""
