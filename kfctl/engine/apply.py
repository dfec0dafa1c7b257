"""Apply a plan: every unblocked step applied, waited on until healthy, dependents unblocked, stuck steps explained.

A kapp-style loop on one thread; API calls run in a bounded thread pool. Each object is server-side
applied unless the live object already holds every field kfctl renders (then it is skipped, so a re-apply
of an untouched platform writes nothing; a field someone changed is put back and reported as Corrected),
and judged at once on the object the server returned, then watched or polled with its kind's health rule
until ready, failed or timed out. What exists before the run comes from the ownership scan
(:mod:`kfctl.engine.ownership`), made before anything is written. Transient API errors are retried with
backoff within the object's wait timeout; denials stop the run at once (no new applies start). Nothing here
prints: progress goes to the reporter as :class:`~kfctl.engine.events.Event` values.

This module only wires the parts together and guarantees the clean-up (workers stopped, watches closed,
Ctrl-C included):

- :mod:`kfctl.engine.schedule` — the run's state and loop; start reading there to follow one object
  (kfctl/engine/README.md follows one in a paragraph);
- :mod:`kfctl.engine.steps` — the four kinds of step, each owning how it starts and how it is checked;
- :mod:`kfctl.engine.work` — what the worker threads do (apply, check, check many), one result type each;
- :mod:`kfctl.k8s.watch` / :mod:`kfctl.k8s.cached` — the watches that answer health reads from memory;
- :mod:`kfctl.engine.result` — what a run takes and returns.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from kfctl.engine.events import Reporter
from kfctl.engine.result import ApplyOptions, ApplyResult, Failure
from kfctl.engine.schedule import Changed, Run
from kfctl.engine.work import Finished, Workers
from kfctl.k8s.api import Cluster
from kfctl.k8s.cached import CachedCluster
from kfctl.k8s.watch import WatchCache
from kfctl.objects import Obj, ObjectKey
from kfctl.plan.graph import Plan, PlannedObject

__all__ = ["ApplyOptions", "ApplyResult", "Engine", "Failure"]


class Engine:
    def __init__(
        self,
        cluster: Cluster,
        reporter: Reporter,
        *,
        options: ApplyOptions,
        prepare: Callable[[PlannedObject], Obj],
        known: Mapping[ObjectKey, Obj | None] | None = None,
        adopting: Mapping[ObjectKey, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``known``: what exists of the bundle (the ownership scan): an object, or None for "does not exist";
        objects it does not cover are read before applying. ``adopting``: foreign objects to take over, with
        who managed them. ``clock``: every time the run measures (timeouts, backoff, ready_at) comes from it."""
        self.cluster = cluster
        self.report = reporter
        self.options = options
        self.prepare = prepare
        self.known = dict(known or {})
        self.adopting = dict(adopting or {})
        self.clock = clock

    def run(self, plan: Plan) -> ApplyResult:
        start = self.clock()
        result = ApplyResult()
        inbox: queue.SimpleQueue[Finished | Changed] = queue.SimpleQueue()
        stopping = threading.Event()  # set when the run ends (Ctrl-C included): workers stop waiting
        watches = WatchCache(self.cluster, on_change=lambda key: inbox.put(Changed(key)))
        workers = Workers(
            CachedCluster(self.cluster, watches),
            watches=watches,
            prepare=self.prepare,
            known=self.known,
            adopting=self.adopting,
            recreate_immutable=self.options.recreate_immutable,
            wait_timeout=self.options.wait_timeout,
            clock=self.clock,
            stopping=stopping,
        )
        pool = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="kfctl-apply")
        run = Run(
            plan,
            options=self.options,
            result=result,
            report=self.report,
            workers=workers,
            pool=pool,
            watches=watches,
            inbox=inbox,
            clock=self.clock,
        )
        try:
            run.loop()
        finally:
            stopping.set()
            watches.close()
            pool.shutdown(wait=True, cancel_futures=True)
        result.seconds = self.clock() - start
        result.ready_at = {sid: t.ready_at - start for sid, t in run.tracks.items() if t.ready_at is not None}
        result.applied_at = {sid: t.applied_at - start for sid, t in run.tracks.items() if t.applied_at is not None}
        applied = [(sid, t) for sid, t in run.tracks.items() if t.applied_at is not None]
        result.started_at = {sid: t.started - start for sid, t in applied if t.started is not None}
        return result
