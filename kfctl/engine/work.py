"""What the engine's worker threads do: apply one object, check one step's health, or check many with one LIST.

The scheduler (:mod:`kfctl.engine.schedule`) hands out typed work items — :class:`Apply`, :class:`Check`,
:class:`CheckBatch` — each of which starts itself on the pool and comes back as its own type of result
(:class:`Applied`, :class:`Checked`, :class:`CheckedMany`), so the scheduler reads each value at the type it
has. What a check reads and how it judges is the step's own (:mod:`kfctl.engine.steps`). Workers only read and
write the cluster and return values; they never touch the run's state, which lives on the scheduler's one
thread.

Reads go through :class:`~kfctl.k8s.cached.CachedCluster`: a waiting object of a watched kind is judged
from memory, so a check costs a request only when no live watch can answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from kfctl.engine import drift, labels
from kfctl.engine.steps import NOT_FOUND, EngineStep, ObjectStep
from kfctl.health.model import Health, progressing
from kfctl.k8s.api import Cluster
from kfctl.k8s.errors import Immutable
from kfctl.k8s.watch import WatchCache
from kfctl.objects import Obj, ObjectKey, meta_of
from kfctl.plan.graph import PlannedObject
from kfctl.plan.rules import never_recreated

Verdict = Literal["created", "configured", "corrected", "adopted", "unchanged", "recreated"]


@dataclass(frozen=True)
class Apply:
    """Server-side apply one object (or skip it when the live object already holds every field kfctl renders)."""

    step: ObjectStep

    def start(self, workers: Workers, pool: ThreadPoolExecutor) -> Applied:
        return Applied(self, pool.submit(workers.apply, self.step))


@dataclass(frozen=True)
class Check:
    """Judge one waiting step: an object (from a watch, else one GET), a webhook backend, an external application.

    ``wait_for_watch``: when the object's watch has not shown kfctl's own write yet, answer "no news" (None)
    instead of reading it from the server — the watch will report it, and the scheduler checks again then."""

    step: EngineStep
    wait_for_watch: bool = False

    def start(self, workers: Workers, pool: ThreadPoolExecutor) -> Checked:
        return Checked(self, pool.submit(workers.check, self))


@dataclass(frozen=True)
class CheckBatch:
    """Judge several waiting objects of one kind in one namespace from a single LIST."""

    steps: tuple[ObjectStep, ...]

    def start(self, workers: Workers, pool: ThreadPoolExecutor) -> CheckedMany:
        return CheckedMany(self, pool.submit(workers.check_many, self.steps))


Work = Apply | Check | CheckBatch


@dataclass
class ApplyOutcome:
    """What an :class:`Apply` did."""

    verdict: Verdict
    live: Obj
    health: Health | None = None  # judged on ``live`` in the worker; None: poll as usual
    message: str = ""  # for the event: the fields corrected, the owner adopted from


# What a worker hands back, one type per kind of work: its value is ``future.result()`` (or its error).
@dataclass(frozen=True)
class Applied:
    work: Apply
    future: Future[ApplyOutcome]


@dataclass(frozen=True)
class Checked:
    """``future``'s value: the step's health, or None for no news (the watch will report the object)."""

    work: Check
    future: Future[Health | None]


@dataclass(frozen=True)
class CheckedMany:
    """``future``'s value: each step's health, by step id."""

    work: CheckBatch
    future: Future[dict[str, Health]]


Finished = Applied | Checked | CheckedMany


class Workers:
    """The worker side of one run. ``known``: what the ownership scan read (an object, or None for "does not
    exist"), each used once; ``adopting``: foreign objects taken over, with who managed them."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        watches: WatchCache,
        prepare: Callable[[PlannedObject], Obj],
        known: Mapping[ObjectKey, Obj | None],
        adopting: Mapping[ObjectKey, str],
        recreate_immutable: bool,
        wait_timeout: float,
        clock: Callable[[], float],
        stopping: threading.Event,
    ) -> None:
        self.cluster = cluster
        self.watches = watches
        self.prepare = prepare
        self.known = dict(known)
        self.adopting = dict(adopting)
        self.recreate_immutable = recreate_immutable
        self.wait_timeout = wait_timeout
        self.clock = clock
        self.stopping = stopping  # set when the run ends (Ctrl-C included): stop waiting at once
        self._known_lock = threading.Lock()

    # --- apply -----------------------------------------------------------------------------------------
    def apply(self, step: ObjectStep) -> ApplyOutcome:
        """Skip when the live object holds every field kfctl renders, else SSA."""
        desired = self.prepare(step.step)
        key = step.key
        res = self.cluster.resource(str(desired["apiVersion"]), str(desired["kind"]))
        with self._known_lock:
            scanned = key in self.known
            live = self.known.pop(key, None)  # read once: a retried apply must not trust it again
        if not scanned:
            live = self.cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)
        deleting = live is not None and bool(meta_of(live).get("deletionTimestamp"))
        corrected: list[str] = []
        if live is not None and not deleting and labels.applied_hash(live) == labels.desired_hash(desired):
            if not drift.differences(desired, live):
                return ApplyOutcome("unchanged", live, self.judge_now(step, live))
            # Something differs, or the server rewrote a value (a quantity, a list others added to): the
            # server's dry run of this very apply says which of kfctl's fields it would change, without writing.
            corrected = drift.corrected_fields(desired, live, self.cluster.apply(desired, dry_run=True))
            if not corrected:
                return ApplyOutcome("unchanged", live, self.judge_now(step, live))
        try:
            out = self.cluster.apply(desired)
        except Immutable as e:
            if not self.recreate_immutable or never_recreated(key.group, key.kind):
                raise
            out = self._recreate(step, desired, live, e)
            return ApplyOutcome("recreated", out, self.judge_now(step, out))
        if live is None:
            return ApplyOutcome("created", out, self.judge_now(step, out))
        if key in self.adopting:
            return ApplyOutcome("adopted", out, self.judge_now(step, out), f"taken over from {self.adopting[key]}")
        if corrected:
            return ApplyOutcome("corrected", out, self.judge_now(step, out), f"drift put back: {', '.join(corrected)}")
        return ApplyOutcome("configured", out, self.judge_now(step, out))

    def _recreate(self, step: ObjectStep, desired: Obj, live: Obj | None, refused: Immutable) -> Obj:
        """--recreate-immutable: delete the live object, wait until it is gone, apply again."""
        key = step.key
        api_version = self.cluster.resource(str(desired["apiVersion"]), key.kind).api_version
        if live is None:
            live = self.cluster.get(api_version, key.kind, namespace=key.namespace, name=key.name)
        if live is None:
            raise refused
        uid = meta_of(live).get("uid")
        self.cluster.delete(api_version, key.kind, namespace=key.namespace, name=key.name, uid=uid)
        deadline = self.clock() + self.wait_timeout
        while self.cluster.get(api_version, key.kind, namespace=key.namespace, name=key.name) is not None:
            if self.clock() > deadline or self.stopping.wait(0.5):
                raise refused
        return self.cluster.apply(desired)

    def judge_now(self, step: ObjectStep, live: Obj) -> Health | None:
        """The first health verdict, on the object the server just returned: saves one read per object."""
        if not step.step.wait:
            return None
        try:
            h = step.health(self.cluster, live)
        except Exception:  # a probe problem here must not count as a failed apply; the poll will see it
            return None
        if h.ready:
            step.served(self.cluster)
        return h

    # --- health ----------------------------------------------------------------------------------------
    def check(self, work: Check) -> Health | None:
        if work.wait_for_watch and isinstance(work.step, ObjectStep) and self.watches.behind(work.step.key):
            return None
        return work.step.check(self.cluster)

    def check_many(self, steps: tuple[ObjectStep, ...]) -> dict[str, Health]:
        """Objects of one kind in one namespace, judged from a single LIST instead of a GET each."""
        first = steps[0]
        res = self.cluster.resource(first.api_version, first.key.kind)
        items = self.cluster.list(res.api_version, first.key.kind, namespace=first.key.namespace)
        by_name = {str(meta_of(o).get("name")): o for o in items}
        out: dict[str, Health] = {}
        for step in steps:
            live = by_name.get(step.key.name)
            out[step.step.id] = step.health(self.cluster, live) if live else progressing(NOT_FOUND)
        return out
