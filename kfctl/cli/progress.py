"""Rendering engine events: a live view per application on a terminal, plain lines otherwise, JSON lines
with -o json.

The engine calls the renderer from its scheduling thread; on a terminal rich's refresh thread draws the live
view too, so the board is read and written under a lock.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TextIO

import click
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from kfctl.cli.board import ASCII_MARKS, Board, Mode
from kfctl.cli.context import GlobalOptions
from kfctl.cli.output import document, glyphs_ok, machine_readable
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
    "Generated",
}
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
    "Generated": "cyan",
}


# On a terminal the live view shows progress per application; of the per-object lines only these, which a
# person should not miss, are printed above it without -v.
_NOTABLE = {"Corrected", "Adopted", "Recreated", "Failed", "Blocked", "Pruned", "Kept", "Stuck", "Generated"}
_BOARD_STYLE = {"ready": "green", "deleted": "green", "failed": "bold red", "blocked": "red", "stuck": "red"}


class EventRenderer:
    """A reporter for the engine; use as a context manager around the run. On a terminal: a live view, one
    line per application (kfctl.cli.board), updated in place; piped: plain lines; -o json: JSON lines."""

    def __init__(self, opts: GlobalOptions, *, mode: Mode = "apply", stream: TextIO | None = None) -> None:
        self.opts = opts
        self.stream = stream or sys.stdout
        self.start = time.monotonic()
        self.tty = self.stream.isatty() and opts.output == "text" and not opts.quiet
        self.console = Console(file=self.stream, highlight=False) if self.tty else None
        self.board = Board(mode, start=time.time(), marks=None if glyphs_ok(self.stream) else ASCII_MARKS)
        self.live: Live | None = None
        self._lock = threading.Lock()  # the engine's thread feeds the board, rich's refresh thread draws it

    def __enter__(self) -> EventRenderer:
        if self.console is not None:
            self.live = Live(console=self.console, get_renderable=self._view, refresh_per_second=4)
            self.live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.live.stop()  # the last frame stays on screen: where each application ended

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.board(event)
        if machine_readable(self.opts):
            click.echo(document(self.opts, event.as_dict(), stream=True), file=self.stream)
            return
        if self.opts.quiet and event.type not in ("Failed", "Stuck"):
            return
        if event.subject == "lock":  # another run holds the install: say so in every mode, or it looks hung
            line = self._line(event)
            if self.console is not None:
                self.console.print(line, style=_STYLE.get(event.type, ""), markup=False)
            else:
                click.echo(line, file=self.stream)
            return
        if self.console is not None:
            if event.type in _NOTABLE or self.opts.verbose > 0:
                self.console.print(self._line(event), style=_STYLE.get(event.type, ""), markup=False)
        elif event.type in _ALWAYS or self.opts.verbose > 0:
            click.echo(self._line(event), file=self.stream)

    def _view(self) -> Group:
        """The board, a line per application cut at the terminal's width (a long wait message would wrap and
        push the view off a small terminal)."""
        with self._lock:
            lines = self.board.lines(time.time())
            states = [self.board.state(a) for a in self.board.apps.values()]
        styles = ["bold", *(_BOARD_STYLE.get(state, "") for state in states)]
        rows = zip(lines, styles, strict=True)
        return Group(*(Text(line, style=style, no_wrap=True, overflow="ellipsis") for line, style in rows))

    def _line(self, event: Event) -> str:
        elapsed = event.at - (time.time() - (time.monotonic() - self.start))
        text = f"[{max(0.0, elapsed):6.1f}s] {event.type:<10} {event.subject}"
        if event.message:
            text += f": {event.message}"
        return text


@contextlib.contextmanager
def check_progress(opts: GlobalOptions, *, stream: TextIO | None = None) -> Iterator[Callable[[str], None]]:
    """`kfctl check`'s progress on a terminal: the check running now (a smoke job takes a while); nothing when
    piped, quiet or JSON. Yields what to call with each check's name as it starts."""
    stream = stream or sys.stderr
    if not (stream.isatty() and opts.output == "text" and not opts.quiet):
        yield lambda _name: None
        return
    # A braille spinner and "…" where the locale draws them; a line spinner and "..." where it would not.
    spinner, more = ("dots", "…") if glyphs_ok(stream) else ("line", "...")
    with Console(file=stream, highlight=False).status(f"checking{more}", spinner=spinner) as status:
        yield lambda name: status.update(f"checking {name}{more}")


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
    help="How long to wait for another run of this install; then exit 12.",
)
