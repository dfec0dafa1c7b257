"""What the engine reports while it works. The CLI renders these (rich, plain lines or JSON lines).

Events are plain values so tests can collect them in a list and assert on order and content.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

EventType = Literal[
    "Created",
    "Configured",
    "Corrected",
    "Adopted",
    "Unchanged",
    "Recreated",
    "Waiting",
    "Retrying",
    "Healthy",
    "Failed",
    "Blocked",
    "Pruned",
    "Deleting",
    "Deleted",
    "Kept",
    "Stuck",
    "Skipped",
    "Inventory",
    "Planned",
    "Generated",  # a generated Secret's keys were drawn at random (never their values)
]


@dataclass(frozen=True)
class Event:
    type: EventType
    subject: str  # a step id: "Deployment.apps kubeflow/foo", "webhook backend kubeflow/svc"
    message: str = ""
    app: str = ""
    chain: tuple[str, ...] = ()  # for Failed/Blocked: subject ← … ← root cause
    at: float = field(default_factory=time.time)
    count: int = 0  # for Planned: how many objects the application's run will touch
    also_in: tuple[str, ...] = ()  # later applications that render the same object (applied once, under ``app``)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": self.type, "subject": self.subject, "ts": round(self.at, 3)}
        if self.message:
            d["message"] = self.message
        if self.app:
            d["app"] = self.app
        if self.chain:
            d["chain"] = list(self.chain)
        if self.count:
            d["count"] = self.count
        if self.also_in:
            d["alsoIn"] = list(self.also_in)
        return d


class Reporter(Protocol):
    def __call__(self, event: Event) -> None: ...


class EventLog:
    """A reporter that keeps every event (tests, and summaries)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: EventType) -> list[Event]:
        return [e for e in self.events if e.type == kind]
