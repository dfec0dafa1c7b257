"""The live view of `kfctl apply` and `kfctl delete`: one line per application — its state, how many of its
objects are applied (or removed) out of N, what it waits on now, and the time — rebuilt from the engine's
events, as `docker compose up` or kapp show theirs. A plain model: the renderer (kfctl.cli.progress) draws its
lines in place on a terminal; tests feed it a recorded event stream and read the lines.

The engine says how many objects each application has (Planned), each object applied (Created …), each wait
(Waiting, Retrying), each failure (Failed, Blocked, Stuck), and when an application's last object is ready
(Healthy of "application NAME"); delete says each object removed (Deleted) or kept (Kept, Skipped). An object
several applications render is applied once, under the first; its events name the others (``also_in``), and
it counts under each of them here, as in apply's end table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kfctl.cli.output import columns
from kfctl.engine.events import Event

APPLIED = frozenset({"Created", "Configured", "Corrected", "Adopted", "Unchanged", "Recreated"})
REMOVED = frozenset({"Deleted", "Pruned"})
LEFT = frozenset({"Kept", "Skipped"})
TROUBLE = frozenset({"Failed", "Blocked", "Stuck"})
MARKS = {"ready": "✓", "deleted": "✓", "failed": "×", "blocked": "×", "stuck": "×"}
PENDING = "·"  # the mark of an application in no final state
# On a terminal whose locale is not UTF-8 (kfctl.cli.output.glyphs_ok): the same marks in ASCII.
ASCII_MARKS = {"ready": "+", "deleted": "+", "failed": "x", "blocked": "x", "stuck": "x", "": "."}
Mode = Literal["apply", "delete"]


@dataclass
class _App:
    name: str
    total: int = 0
    planned: str = ""  # the Planned message: "17 objects; after cert-manager"
    done: set[str] = field(default_factory=set)  # objects applied (apply) or removed / left (delete)
    left: int = 0  # delete: objects kept or skipped
    waiting: dict[str, str] = field(default_factory=dict)  # subject → what it waits for
    trouble: tuple[str, str] | None = None  # (state, "subject: message") of the first failure
    started: float | None = None
    ended: float | None = None  # apply: when its last object was ready; delete: when its last one went


class Board:
    """Feed it events (call it); ``lines(now)`` is the view at wall-clock time ``now``."""

    def __init__(self, mode: Mode, *, start: float, marks: Mapping[str, str] | None = None) -> None:
        self.mode = mode
        self.start = start
        self.marks = {**MARKS, "": PENDING} if marks is None else dict(marks)
        self.apps: dict[str, _App] = {}

    def __call__(self, event: Event) -> None:
        if not event.app:
            return
        # An object several applications render is applied once but is each one's: it moves every one of them.
        for name in (event.app, *event.also_in):
            self._update(self.apps.setdefault(name, _App(name)), event)

    def _update(self, app: _App, event: Event) -> None:
        kind = event.type
        if kind == "Planned":
            app.total, app.planned = event.count, event.message
            return
        if app.started is None and kind != "Healthy":
            app.started = event.at
        if (kind in APPLIED and self.mode == "apply") or kind in REMOVED:
            app.done.add(event.subject)
        elif kind in LEFT and self.mode == "delete":
            app.done.add(event.subject)
            app.left += 1
        if self.mode == "delete" and app.total and len(app.done) >= app.total and app.ended is None:
            app.ended = event.at
        if kind in ("Waiting", "Retrying"):
            app.waiting[event.subject] = event.message
        elif kind not in APPLIED:
            app.waiting.pop(event.subject, None)
        if kind == "Healthy" and event.subject == f"application {app.name}":
            app.ended = event.at
        if kind in TROUBLE and app.trouble is None:
            app.trouble = (kind.lower(), f"{event.subject}: {event.message}")
            app.ended = event.at

    def state(self, app: _App) -> str:
        if app.trouble is not None:
            return app.trouble[0]
        if self.mode == "apply":
            if app.ended is not None:
                return "ready"
            if app.started is None:
                return "pending"
            return "waiting" if app.total and len(app.done) >= app.total else "applying"
        if app.started is None:
            return "pending"
        return "deleted" if app.total and len(app.done) >= app.total else "deleting"

    def lines(self, now: float) -> list[str]:
        rows = []
        for app in self.apps.values():
            state = self.state(app)
            verb = "applied" if self.mode == "apply" else "removed"
            progress = f"{len(app.done) - app.left}/{app.total} {verb}" if app.total else f"{len(app.done)} {verb}"
            if app.left:
                progress += f", {app.left} kept"
            end = app.ended if state in MARKS else None  # a final state: its time stops
            elapsed = "" if app.started is None else f"{(end or now) - self.start:.1f}s"
            mark = self.marks.get(state, self.marks[""])
            rows.append([mark, app.name, state, progress, elapsed, self._detail(app, state)])
        return columns(("", "APPLICATION", "STATE", "OBJECTS", "TIME", ""), rows, align="lllrrl")

    @staticmethod
    def _detail(app: _App, state: str) -> str:
        if app.trouble is not None:
            return app.trouble[1]
        if state == "pending":
            return app.planned.partition("; ")[2]  # "after cert-manager, training-operator"
        if app.waiting:
            subject, message = next(iter(app.waiting.items()))
            more = f" (+{len(app.waiting) - 1} more)" if len(app.waiting) > 1 else ""
            return f"waiting for {subject}: {message}{more}"
        return ""
