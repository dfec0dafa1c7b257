"""What an apply run takes (:class:`ApplyOptions`) and gives back (:class:`ApplyResult`, :class:`Failure`).

Kept apart from the scheduler so that callers (the CLI, the per-application table, the critical path) can
read a result without importing the machinery that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kfctl.objects import ObjectKey


@dataclass(frozen=True)
class ApplyOptions:
    concurrency: int = 8
    wait_timeout: float = 300.0  # per step, from its first apply attempt
    timeout: float = 1800.0  # the whole run
    recreate_immutable: bool = False
    poll_interval: float = 1.0


@dataclass
class Failure:
    subject: str
    message: str
    chain: tuple[str, ...]
    denied: bool = False


@dataclass
class ApplyResult:
    created: list[str] = field(default_factory=list)
    configured: list[str] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)  # drift in kfctl's fields put back
    adopted: list[str] = field(default_factory=list)  # foreign objects taken over on request
    recreated: list[str] = field(default_factory=list)  # deleted and created again (--recreate-immutable)
    unchanged: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    blocked: list[Failure] = field(default_factory=list)
    uids: dict[ObjectKey, str] = field(default_factory=dict)
    seconds: float = 0.0
    # step id → seconds from the run's start to the step being ready (healthy, or applied when it has no wait):
    # what the critical path and the time to healthy per application are read from.
    ready_at: dict[str, float] = field(default_factory=dict)
    # step id → seconds from the run's start to its last apply returning: with ready_at, how long a step
    # waited for the scheduler once its last dependency was ready (kfctl.plan.latency).
    applied_at: dict[str, float] = field(default_factory=dict)
    # step id → seconds from the run's start to its first apply request: splits that wait into queued (for an apply
    # slot or the CRD gate) and the request's own time (kfctl.plan.latency).
    started_at: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.blocked

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.configured) + len(self.corrected) + len(self.adopted) + len(self.recreated)
