"""Rendering engine events: a rich live view on a terminal, plain lines otherwise, JSON lines with -o json.

The engine calls the renderer from its scheduling thread only, so no locking is needed here.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TextIO

import click
from rich.console import Console
from rich.status import Status

from kfctl.cli.context import GlobalOptions
from kfctl.engine.events import Event

# Shown without -v; the rest (Unchanged, Healthy of unwaited kinds …) only with -v.
_ALWAYS = {
    "Created",
    "Configured",
    "Corrected",
    "Adopted",
    "Recreated",
    "Failed",
    "Blocked",
    "Pruned",
    "Deleted",
    "Kept",
    "Stuck",
    "Retrying",
    "Skipped",
}
APPLIED = ("Created", "Configured", "Corrected", "Adopted", "Unchanged", "Recreated")
_STYLE = {
    "Failed": "bold red",
    "Blocked": "red",
    "Stuck": "red",
    "Retrying": "yellow",
    "Waiting": "yellow",
    "Healthy": "green",
    "Created": "cyan",
    "Configured": "cyan",
    "Corrected": "yellow",
    "Adopted": "yellow",
    "Pruned": "magenta",
    "Deleted": "magenta",
    "Kept": "blue",
    "Skipped": "blue",
}


class EventRenderer:
    """A reporter for the engine; use as a context manager around the run."""

    def __init__(self, opts: GlobalOptions, *, stream: TextIO | None = None) -> None:
        self.opts = opts
        self.stream = stream or sys.stdout
        self.start = time.monotonic()
        self.counts: Counter[str] = Counter()
        self.waiting: dict[str, str] = {}
        self.tty = self.stream.isatty() and opts.output == "text" and not opts.quiet
        self.console = Console(file=self.stream, highlight=False) if self.tty else None
        self.status: Status | None = None

    def __enter__(self) -> EventRenderer:
        if self.console is not None:
            self.status = self.console.status("starting…")
            self.status.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.status is not None:
            self.status.stop()

    def __call__(self, event: Event) -> None:
        self.counts[event.type] += 1
        if event.type in ("Waiting", "Retrying"):
            self.waiting[event.subject] = event.message
        elif event.type not in APPLIED:
            self.waiting.pop(event.subject, None)
        if self.opts.output == "json":
            click.echo(json.dumps(event.as_dict(), sort_keys=True), file=self.stream)
            return
        if self.opts.quiet and event.type not in ("Failed", "Stuck"):
            return
        show = event.type in _ALWAYS or self.opts.verbose > 0
        if self.console is not None:
            if show:
                self.console.print(self._line(event), style=_STYLE.get(event.type, ""), markup=False)
            if self.status is not None:
                self.status.update(self._status_text())
        elif show:
            click.echo(self._line(event), file=self.stream)

    def _line(self, event: Event) -> str:
        elapsed = event.at - (time.time() - (time.monotonic() - self.start))
        text = f"[{max(0.0, elapsed):6.1f}s] {event.type:<10} {event.subject}"
        if event.message:
            text += f": {event.message}"
        return text

    def _status_text(self) -> str:
        done = sum(self.counts[k] for k in APPLIED)
        parts = [f"{done} applied", f"{self.counts['Healthy']} healthy"]
        if self.counts["Pruned"] or self.counts["Deleted"]:
            parts.append(f"{self.counts['Pruned'] + self.counts['Deleted']} removed")
        head = ", ".join(parts)
        if self.waiting:
            subject, message = next(iter(self.waiting.items()))
            more = f" (+{len(self.waiting) - 1} more)" if len(self.waiting) > 1 else ""
            return f"{head} — waiting for {subject}: {message}{more}"
        return head


@contextlib.contextmanager
def check_progress(opts: GlobalOptions, *, stream: TextIO | None = None) -> Iterator[Callable[[str], None]]:
    """`kfctl check`'s progress on a terminal: the check running now (a smoke job takes a while); nothing when
    piped, quiet or JSON. Yields what to call with each check's name as it starts."""
    stream = stream or sys.stderr
    if not (stream.isatty() and opts.output == "text" and not opts.quiet):
        yield lambda _name: None
        return
    with Console(file=stream, highlight=False).status("checking…") as status:
        yield lambda name: status.update(f"checking {name}…")


def parse_duration(text: str) -> float:
    """ "90", "90s", "5m", "1h30m" → seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    bad = click.BadParameter(f"{text!r} is not a duration (e.g. 90s, 5m, 1h)")

    def number(digits: str) -> float:
        try:  # "1.2.3" passes the character check but is no number: a usage error, not a crash
            return float(digits)
        except ValueError:
            raise bad from None

    total, num = 0.0, ""
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in units and num:
            total += number(num) * units[ch]
            num = ""
        else:
            raise bad
    if num:
        total += number(num)
    if total <= 0:
        raise click.BadParameter(f"{text!r} must be positive")
    return total


class Duration(click.ParamType):  # type: ignore[type-arg]
    name = "duration"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        return parse_duration(str(value))


# apply and delete take the install's lock (a Lease); how long to wait for another run to free it.
lock_timeout_option = click.option(
    "--lock-timeout",
    type=Duration(),
    default="30s",
    show_default=True,
    help="How long to wait for another kfctl run of this install (apply, delete) to finish; then exit 12 naming it.",
)
