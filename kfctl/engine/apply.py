"""The scheduler: apply every unblocked step, wait on health, unblock dependents, explain what is stuck.

A kapp-style loop on one thread; API calls run in a bounded thread pool. Each object is server-side
applied unless the live object already holds every field kfctl renders (then it is skipped, so a re-apply
of an untouched platform writes nothing; a field someone changed is put back and reported as Corrected),
and judged at once on the object the server returned, then polled with its kind's health rule until
ready, failed or timed out. What exists before the run comes from the ownership scan
(:mod:`kfctl.engine.ownership`), made before anything is written.
Transient API errors are retried with backoff within the object's wait timeout; denials stop the run at
once (no new applies start). Nothing here prints: progress goes to the reporter as
:class:`~kfctl.engine.events.Event` values.

The loop is event-driven so that it stays linear in the number of objects (5,000 in the benchmarks): a
step is looked at again only when one of its dependencies changed state, its retry or poll time came, or
an apply slot freed — never by scanning every step on every turn.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal, cast

from kfctl.engine import drift, labels
from kfctl.engine.events import Event, EventType, Reporter
from kfctl.engine.probe import backend_health, external_health, object_health, workload_problems
from kfctl.engine.retry import Classified, backoff, classify
from kfctl.health.model import Health, progressing, ready
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Unreachable
from kfctl.objects import Obj, ObjectKey
from kfctl.plan.graph import Plan, Step, application_id, topological_order
from kfctl.plan.rules import never_recreated

State = Literal["pending", "applying", "waiting", "ready", "failed", "blocked"]
TERMINAL = ("ready", "failed", "blocked")


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
    unchanged: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    blocked: list[Failure] = field(default_factory=list)
    uids: dict[ObjectKey, str] = field(default_factory=dict)
    seconds: float = 0.0
    # step id → seconds from the run's start to the step being ready (healthy, or applied when it has no wait):
    # what the critical path and the time to healthy per application are read from.
    ready_at: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.blocked

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.configured) + len(self.corrected) + len(self.adopted)


@dataclass
class _Track:
    step: Step
    state: State = "pending"
    started: float | None = None  # first apply attempt
    attempts: int = 0
    not_before: float = 0.0
    next_check: float = 0.0
    checking: bool = False
    health: Health | None = None
    last_message: str = ""
    live: Obj | None = None
    ready_at: float | None = None  # clock() when it became ready


@dataclass
class _ApplyOutcome:
    verdict: Literal["created", "configured", "corrected", "adopted", "unchanged", "recreated"]
    live: Obj
    health: Health | None = None  # judged on ``live`` in the worker; None: poll as usual
    message: str = ""  # for the event: the fields corrected, the owner adopted from


@dataclass
class _Run:
    """The scheduler's bookkeeping for one run; every queue holds topological indexes."""

    order: list[str]
    tracks: dict[str, _Track]
    index: dict[str, int]
    dependents: dict[str, list[str]]
    remaining: int
    candidates: list[int] = field(default_factory=list)  # heap: pending steps worth a look
    queued: set[int] = field(default_factory=set)
    retries: list[tuple[float, int]] = field(default_factory=list)  # heap: (not_before, index)
    checks: list[tuple[float, int]] = field(default_factory=list)  # heap: (next_check, index)
    applying: int = 0

    def consider(self, sid: str) -> None:
        i = self.index[sid]
        if i not in self.queued and self.tracks[sid].state == "pending":
            self.queued.add(i)
            heapq.heappush(self.candidates, i)


COALESCE_SECONDS = 0.25
BATCH_MIN = 3  # due checks of one kind in one namespace that are cheaper as one LIST than as GETs
NOT_BATCHED = frozenset({"CustomResourceDefinition"})  # large objects; a LIST would return them all


def _api_failure(fut: Future[object]) -> BaseException | None:
    """The API failure a worker met, if any. Anything else is a bug in kfctl: raised, so that the CLI says
    so (exit 1) instead of reporting it as the API server's denial or an object's health."""
    err = fut.exception()
    if err is not None and not isinstance(err, (ApiError, Unreachable, NoKindMatch)):
        raise err
    return err


def _batches(due: list[_Track]) -> list[list[_Track]]:
    """Group due checks: objects of one namespaced kind in one namespace together, the rest alone."""
    groups: dict[tuple[str, str, str], list[_Track]] = {}
    out: list[list[_Track]] = []
    for t in due:
        step = t.step
        if step.kind != "object" or step.key is None or step.obj is None or not step.key.namespace:
            out.append([t])
            continue
        if step.key.kind in NOT_BATCHED:
            out.append([t])
            continue
        groups.setdefault((str(step.obj.get("apiVersion")), step.key.kind, step.key.namespace), []).append(t)
    for group in groups.values():
        if len(group) >= BATCH_MIN:
            out.append(group)
        else:
            out += [[t] for t in group]
    return out


class Engine:
    def __init__(
        self,
        cluster: Cluster,
        reporter: Reporter,
        *,
        options: ApplyOptions,
        prepare: Callable[[Step], Obj],
        known: Mapping[ObjectKey, Obj | None] | None = None,
        adopting: Mapping[ObjectKey, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``known``: what exists of the bundle (the ownership scan): an object, or None for "does not exist";
        objects it does not cover are read before applying. ``adopting``: foreign objects to take over, with
        who managed them."""
        self.cluster = cluster
        self.report = reporter
        self.options = options
        self.prepare = prepare
        self.known = dict(known or {})
        self.adopting = dict(adopting or {})
        self.clock = clock
        self.sleep = sleep

    # --- public --------------------------------------------------------------------------------------
    def run(self, plan: Plan) -> ApplyResult:
        start = self.clock()
        deadline = start + self.options.timeout
        order = topological_order(plan)
        tracks = {sid: _Track(plan.steps[sid]) for sid in order}
        r = _Run(order, tracks, {sid: i for i, sid in enumerate(order)}, plan.dependents(), len(order))
        self._run = r
        self._app_objects = Counter(s.app for s in plan.objects())
        self._unready = Counter(self._app_objects)  # application → objects not ready yet
        self._batch_members: dict[Future[object], list[str]] = {}
        self._stopping = threading.Event()  # set when the run ends (Ctrl-C included): workers stop waiting
        for sid in order:
            r.consider(sid)
        result = ApplyResult()
        denied = False
        pool = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="kfctl-apply")
        futures: dict[Future[object], tuple[str, str]] = {}
        try:
            while r.remaining:
                now = self.clock()
                if now > deadline:
                    self._time_out_all(plan, tracks, result, f"the overall --timeout of {self.options.timeout:g}s")
                    break
                while r.retries and r.retries[0][0] <= now:
                    r.consider(order[heapq.heappop(r.retries)[1]])
                self._start_candidates(plan, now, futures, pool, result, stop=denied)
                due: list[_Track] = []
                # Checks due soon are taken along with the due ones, so that more of them share a LIST.
                horizon = now + COALESCE_SECONDS if r.checks and r.checks[0][0] <= now else now
                while r.checks and r.checks[0][0] <= horizon:
                    t = tracks[order[heapq.heappop(r.checks)[1]]]
                    if t.state != "waiting" or t.checking:
                        continue
                    if t.started is not None and now - t.started > self.options.wait_timeout:
                        self._fail(plan, tracks, t, result, self._timeout_message(t))
                        continue
                    t.checking = True
                    due.append(t)
                for group in _batches(due):
                    if len(group) == 1:
                        futures[pool.submit(self._check, group[0].step)] = (group[0].step.id, "check")
                    else:
                        batch = cast("Future[object]", pool.submit(self._check_many, [t.step for t in group]))
                        futures[batch] = (group[0].step.id, "batch")
                        self._batch_members[batch] = [t.step.id for t in group]
                if not r.remaining:
                    break
                if not futures:
                    next_due = [q[0][0] for q in (r.retries, r.checks) if q]
                    self.sleep(min(0.05, max(0.0, min(next_due) - now)) if next_due else 0.05)
                    continue
                done, _ = wait(list(futures), timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in done:
                    sid, what = futures.pop(fut)
                    t = tracks[sid]
                    if what == "apply":
                        r.applying -= 1
                        denied = self._after_apply(plan, tracks, t, fut, result) or denied
                    elif what == "batch":
                        self._after_check_many(plan, tracks, self._batch_members.pop(fut), fut, result)
                    else:
                        self._after_check(plan, tracks, t, fut, result)
                if denied and not any(what == "apply" for _, what in futures.values()):
                    self._stop_after_denial(plan, tracks, result)
                    break
        finally:
            self._stopping.set()
            pool.shutdown(wait=True, cancel_futures=True)
        result.seconds = self.clock() - start
        result.ready_at = {sid: t.ready_at - start for sid, t in tracks.items() if t.ready_at is not None}
        return result

    def _changed(self, t: _Track) -> None:
        """A step changed state: count it when it is done, and look again at what depends on it."""
        r = self._run
        if t.state in TERMINAL:
            r.remaining -= 1
        elif t.state == "waiting":
            heapq.heappush(r.checks, (t.next_check, r.index[t.step.id]))
        for d in r.dependents[t.step.id]:
            r.consider(d)

    # --- scheduling ------------------------------------------------------------------------------------
    def _start_candidates(
        self,
        plan: Plan,
        now: float,
        futures: dict[Future[object], tuple[str, str]],
        pool: ThreadPoolExecutor,
        result: ApplyResult,
        *,
        stop: bool,
    ) -> None:
        """Look at queued pending steps in plan order; stop at the first that waits for an apply slot."""
        r = self._run
        while r.candidates:
            i = heapq.heappop(r.candidates)
            r.queued.discard(i)
            sid = r.order[i]
            t = r.tracks[sid]
            if t.state != "pending":
                continue
            if self._maybe_start(plan, r.tracks, sid, t, now, futures, pool, result, stop=stop) == "full":
                r.consider(sid)
                return

    def _maybe_start(
        self,
        plan: Plan,
        tracks: dict[str, _Track],
        sid: str,
        t: _Track,
        now: float,
        futures: dict[Future[object], tuple[str, str]],
        pool: ThreadPoolExecutor,
        result: ApplyResult,
        *,
        stop: bool,
    ) -> Literal["full"] | None:
        """Start a step whose dependencies allow it; "full" when it must wait for an apply slot.

        A step that cannot start yet is dropped from the queue: a dependency's change of state, or its
        retry time, puts it back.
        """
        edges = plan.deps.get(sid, [])
        for e in edges:
            dep = tracks[e.dependency]
            if dep.state in ("failed", "blocked"):
                self._block(plan, tracks, t, result, e.dependency)
                return None
        if stop or now < t.not_before:
            return None
        for e in edges:
            dep = tracks[e.dependency]
            if e.rule.order_only and dep.state in ("waiting", "ready"):
                continue
            if dep.state != "ready":
                return None
        step = t.step
        if step.kind == "application":
            t.started = t.started if t.started is not None else now
            self._ready(t, ready("all objects ready"), quiet=True)
            return None
        if step.kind in ("webhook-backend", "external"):
            t.started = t.started if t.started is not None else now
            t.state = "waiting"
            t.next_check = now
            self._changed(t)
            return None
        if self._run.applying >= self.options.concurrency:
            return "full"
        if t.started is None:
            t.started = now
        t.state = "applying"
        t.attempts += 1
        self._run.applying += 1
        futures[pool.submit(self._apply, step)] = (sid, "apply")
        return None

    def _apply(self, step: Step) -> _ApplyOutcome:
        """Runs in a worker: skip when the live object holds every field kfctl renders, else SSA."""
        desired = self.prepare(step)
        assert step.key is not None
        key = step.key
        res = self.cluster.resource(str(desired["apiVersion"]), str(desired["kind"]))
        if key in self.known:
            live = self.known.pop(key)  # read once: a retried apply must not trust it again
        else:
            live = self.cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)
        deleting = live is not None and bool((live.get("metadata") or {}).get("deletionTimestamp"))
        corrected: list[str] = []
        if live is not None and not deleting and labels.applied_hash(live) == labels.desired_hash(desired):
            if not drift.differences(desired, live):
                return _ApplyOutcome("unchanged", live, self._judge_now(step, live))
            # Something differs, or the server rewrote a value (a quantity, a list others added to): the
            # server's dry run of this very apply says which of kfctl's fields it would change, without writing.
            corrected = drift.corrected_fields(desired, live, self.cluster.apply(desired, dry_run=True))
            if not corrected:
                return _ApplyOutcome("unchanged", live, self._judge_now(step, live))
        try:
            out = self.cluster.apply(desired)
        except ApiError as e:
            c = classify(e)
            if c.verdict != "immutable" or not self.options.recreate_immutable or never_recreated(key.group, key.kind):
                raise
            if live is None:
                live = self.cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)
            if live is None:
                raise
            uid = (live.get("metadata") or {}).get("uid")
            self.cluster.delete(res.api_version, key.kind, namespace=key.namespace, name=key.name, uid=uid)
            deadline = time.monotonic() + self.options.wait_timeout
            while self.cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name) is not None:
                if time.monotonic() > deadline or self._stopping.wait(0.5):
                    raise
            out = self.cluster.apply(desired)
            return _ApplyOutcome("recreated", out, self._judge_now(step, out))
        if live is None:
            return _ApplyOutcome("created", out, self._judge_now(step, out))
        if key in self.adopting:
            return _ApplyOutcome("adopted", out, self._judge_now(step, out), f"taken over from {self.adopting[key]}")
        if corrected:
            return _ApplyOutcome(
                "corrected", out, self._judge_now(step, out), f"drift put back: {', '.join(corrected)}"
            )
        return _ApplyOutcome("configured", out, self._judge_now(step, out))

    def _judge_now(self, step: Step, live: Obj) -> Health | None:
        """The first health verdict, on the object the server just returned: saves one GET per object."""
        if not step.wait:
            return None
        try:
            h = object_health(self.cluster, live)
        except Exception:  # a probe problem here must not count as a failed apply; the poll will see it
            return None
        if h.ready:
            self._served(step)
        return h

    def _served(self, step: Step) -> None:
        if step.key is not None and step.key.kind == "CustomResourceDefinition" and step.obj is not None:
            # Its kinds are served now: forget the cached discovery so dependents map at once.
            self.cluster.invalidate(str((step.obj.get("spec") or {}).get("group", "")))

    def _after_apply(
        self, plan: Plan, tracks: dict[str, _Track], t: _Track, fut: Future[object], result: ApplyResult
    ) -> bool:
        """Record an apply's outcome; True when the API server denied it (the run stops)."""
        sid = t.step.id
        err = _api_failure(fut)
        if err is not None:
            c = classify(err)
            return self._apply_error(plan, tracks, t, c, result)
        outcome = fut.result()
        assert isinstance(outcome, _ApplyOutcome)
        t.live = outcome.live
        assert t.step.key is not None
        uid = (outcome.live.get("metadata") or {}).get("uid")
        if uid:
            result.uids[t.step.key] = str(uid)
        kind: EventType = {
            "created": "Created",
            "configured": "Configured",
            "corrected": "Corrected",
            "adopted": "Adopted",
            "unchanged": "Unchanged",
            "recreated": "Recreated",
        }[outcome.verdict]  # type: ignore[assignment]
        {
            "created": result.created,
            "configured": result.configured,
            "corrected": result.corrected,
            "adopted": result.adopted,
            "recreated": result.configured,
            "unchanged": result.unchanged,
        }[outcome.verdict].append(sid)
        self._emit(kind, t.step, outcome.message)
        if not t.step.wait:
            self._ready(t, ready("applied"), quiet=True)
        elif outcome.health is not None:
            t.state = "waiting"
            for d in self._run.dependents[sid]:  # order-only dependents may start now
                self._run.consider(d)
            self._judge(plan, tracks, t, outcome.health, result)
        else:
            t.state = "waiting"
            t.next_check = self.clock()
            self._changed(t)
        return False

    def _apply_error(
        self, plan: Plan, tracks: dict[str, _Track], t: _Track, c: Classified, result: ApplyResult
    ) -> bool:
        now = self.clock()
        if c.verdict == "transient":
            elapsed = now - (t.started or now)
            if elapsed > self.options.wait_timeout:
                self._fail(plan, tracks, t, result, f"still failing after {elapsed:.0f}s: {c.message}")
                return False
            delay = backoff(t.attempts, retry_after=c.retry_after)
            t.state = "pending"
            t.not_before = now + delay
            heapq.heappush(self._run.retries, (t.not_before, self._run.index[t.step.id]))
            if c.message != t.last_message:
                t.last_message = c.message
                self._emit("Retrying", t.step, f"{c.message} (retrying in {delay:.1f}s)")
            return False
        if c.verdict == "immutable":
            key = t.step.key
            assert key is not None
            why_not = never_recreated(key.group, key.kind)
            fix = (
                f"kfctl never recreates it ({why_not}): change it back in the source, or migrate by hand"
                if why_not
                else "re-run with --recreate-immutable to delete and recreate it"
            )
            msg = f"immutable field(s) changed: {', '.join(c.fields)}; {fix} ({c.message})"
            self._fail(plan, tracks, t, result, msg, denied=True)
            return True
        self._fail(plan, tracks, t, result, c.message, denied=True)
        return c.verdict == "denied" or c.verdict == "fatal"

    def _check(self, step: Step) -> Health:
        if step.kind == "webhook-backend":
            assert step.backend is not None
            return backend_health(self.cluster, step.backend)
        if step.kind == "external":
            assert step.external is not None
            return external_health(self.cluster, step.external)
        assert step.key is not None and step.obj is not None
        res = self.cluster.resource(str(step.obj["apiVersion"]), step.key.kind)
        live = self.cluster.get(res.api_version, step.key.kind, namespace=step.key.namespace, name=step.key.name)
        if live is None:
            return progressing("not found (deleted by someone else?)")
        h = object_health(self.cluster, live)
        if h.ready:
            self._served(step)
        return h

    def _check_many(self, steps: list[Step]) -> dict[str, Health]:
        """Objects of one kind in one namespace, judged from a single LIST instead of a GET each."""
        first = steps[0]
        assert first.key is not None and first.obj is not None
        res = self.cluster.resource(str(first.obj["apiVersion"]), first.key.kind)
        items = self.cluster.list(res.api_version, first.key.kind, namespace=first.key.namespace)
        by_name = {str((o.get("metadata") or {}).get("name")): o for o in items}
        out: dict[str, Health] = {}
        for step in steps:
            assert step.key is not None
            live = by_name.get(step.key.name)
            out[step.id] = (
                object_health(self.cluster, live) if live else progressing("not found (deleted by someone else?)")
            )
        return out

    def _after_check_many(
        self, plan: Plan, tracks: dict[str, _Track], sids: list[str], fut: Future[object], result: ApplyResult
    ) -> None:
        err = _api_failure(fut)
        verdicts = {} if err is not None else fut.result()
        assert isinstance(verdicts, dict)
        for sid in sids:
            t = tracks[sid]
            t.checking = False
            if t.state != "waiting":
                continue
            if err is not None:
                c = classify(err)
                if c.verdict != "transient":
                    self._fail(plan, tracks, t, result, c.message)
                    continue
                self._judge(plan, tracks, t, progressing(c.message), result)
            else:
                self._judge(plan, tracks, t, verdicts[sid], result)

    def _after_check(
        self, plan: Plan, tracks: dict[str, _Track], t: _Track, fut: Future[object], result: ApplyResult
    ) -> None:
        t.checking = False
        err = _api_failure(fut)
        if err is not None:
            c = classify(err)
            if c.verdict != "transient":
                self._fail(plan, tracks, t, result, c.message)
                return
            h = progressing(c.message)
        else:
            h = fut.result()  # type: ignore[assignment]
            assert isinstance(h, Health)
        self._judge(plan, tracks, t, h, result)

    def _judge(self, plan: Plan, tracks: dict[str, _Track], t: _Track, h: Health, result: ApplyResult) -> None:
        """Act on a waiting step's health verdict: ready, failed, or poll again later."""
        now = self.clock()
        t.health = h
        if h.ready:
            self._ready(t, h)
            return
        if h.failed:
            self._fail(plan, tracks, t, result, h.message)
            return
        if h.message != t.last_message:
            t.last_message = h.message
            self._emit("Waiting", t.step, h.message)
        waited = now - (t.started or now)
        t.next_check = now + min(self.options.poll_interval, 0.25 + waited / 10)
        heapq.heappush(self._run.checks, (t.next_check, self._run.index[t.step.id]))

    # --- outcomes --------------------------------------------------------------------------------------
    def _ready(self, t: _Track, h: Health, *, quiet: bool = False) -> None:
        t.state = "ready"
        t.health = h
        t.ready_at = self.clock()
        if not quiet:
            self._emit("Healthy", t.step, h.message)
        if t.step.kind == "object":
            self._unready[t.step.app] -= 1
            if not self._unready[t.step.app]:  # the application's last object: say so, once
                n = self._app_objects[t.step.app]
                self.report(Event("Healthy", application_id(t.step.app), f"all {n} objects ready", app=t.step.app))
        self._changed(t)

    def _fail(
        self,
        plan: Plan,
        tracks: dict[str, _Track],
        t: _Track,
        result: ApplyResult,
        message: str,
        *,
        denied: bool = False,
    ) -> None:
        t.state = "failed"
        t.last_message = message
        detail = message
        if t.step.key is not None and t.live is not None and not denied:
            try:
                problems = workload_problems(self.cluster, t.step.key, t.live)
            except Exception:  # diagnosis is best effort; never mask the failure itself
                problems = []
            if problems:
                detail = f"{message}: {'; '.join(problems)}"
        t.last_message = detail
        chain = (f"{t.step.id} {detail}",)
        result.failed.append(Failure(t.step.id, detail, chain, denied=denied))
        self._emit("Failed", t.step, detail, chain=chain)
        self._changed(t)

    def _block(self, plan: Plan, tracks: dict[str, _Track], t: _Track, result: ApplyResult, dep: str) -> None:
        t.state = "blocked"
        chain = (t.step.id, *self._chain(plan, tracks, dep))
        msg = "behind " + " ← ".join(chain[1:])
        result.blocked.append(Failure(t.step.id, msg, chain))
        self._emit("Blocked", t.step, msg, chain=chain)
        self._changed(t)

    def _chain(self, plan: Plan, tracks: dict[str, _Track], sid: str) -> tuple[str, ...]:
        """From a step to the root cause: follow the first dependency that is not ready."""
        out: list[str] = []
        seen: set[str] = set()
        while sid not in seen:
            seen.add(sid)
            t = tracks[sid]
            nxt = next(
                (e.dependency for e in plan.deps.get(sid, []) if tracks[e.dependency].state != "ready"),
                None,
            )
            if nxt is None or t.state == "failed":
                out.append(f"{sid} {t.last_message}".rstrip())
                break
            out.append(sid)
            sid = nxt
        return tuple(out)

    def _timeout_message(self, t: _Track) -> str:
        why = t.last_message or (t.health.message if t.health else "no status")
        return f"not healthy after --wait-timeout {self.options.wait_timeout:g}s: {why}"

    def _time_out_all(self, plan: Plan, tracks: dict[str, _Track], result: ApplyResult, what: str) -> None:
        for sid in self._run.order:
            t = tracks[sid]
            if t.state in ("waiting", "applying"):
                self._fail(plan, tracks, t, result, f"not healthy within {what}: {t.last_message or 'no status'}")
        for sid in self._run.order:
            t = tracks[sid]
            if t.state == "pending":
                dep = next(
                    (e.dependency for e in plan.deps.get(sid, []) if tracks[e.dependency].state != "ready"), None
                )
                if dep is not None:
                    self._block(plan, tracks, t, result, dep)
                else:
                    self._fail(plan, tracks, t, result, f"not applied within {what}: {t.last_message}")

    def _stop_after_denial(self, plan: Plan, tracks: dict[str, _Track], result: ApplyResult) -> None:
        for sid in self._run.order:
            t = tracks[sid]
            if t.state in TERMINAL:
                continue
            t.state = "blocked"
            chain = (sid, "not attempted: the run stopped after the API server denied a request")
            result.blocked.append(Failure(sid, chain[1], chain))
            self._emit("Skipped", t.step, chain[1])

    def _emit(self, kind: EventType, step: Step, message: str = "", *, chain: tuple[str, ...] = ()) -> None:
        self.report(Event(kind, step.id, message, app=step.app, chain=chain))
