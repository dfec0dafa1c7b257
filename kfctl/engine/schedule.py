"""One apply run's state and its loop: which step starts, which is checked, what became of each.

Follow one object from pending to healthy (kfctl/engine/README.md tells the same path in one paragraph):

1. :meth:`Run.consider` queues a pending step when something it depends on changed state; the loop's
   :meth:`Run._start_candidates` looks at it (a CRD only while fewer than three are in flight,
   :mod:`kfctl.engine.crdgate`), and :meth:`Run._maybe_start` starts it once every dependency is ready — or, for
   an order-only rule, applied. Starting is the step's own: each kind of step
   (:mod:`kfctl.engine.steps`) picks one of the run's three ways. An :class:`~kfctl.engine.steps.ObjectStep`
   asks for :meth:`Run.start_apply`, which waits for a free apply slot (when slots are few, the step with the
   longest chain of waits from it goes first, :mod:`kfctl.plan.priority`) and hands an
   :class:`~kfctl.engine.work.Apply` to a worker (:meth:`~kfctl.engine.work.Workers.apply`); a webhook backend
   or an external application is checked at once (:meth:`Run.start_waiting`); an application gate opens
   (:meth:`Run.open_gate`).
2. The worker's :class:`~kfctl.engine.work.Applied` comes back through the ``inbox``;
   :meth:`Run._after_apply` records the outcome (Created, Configured …). Without a wait it is ready; else
   it is "waiting", judged at once on the object the server returned (:meth:`Run._judge`).
3. A waiting step is checked again at its ``next_check`` (a quarter second, backing off to
   ``poll_interval``) by :meth:`Run._start_due_checks` — the step's own ``check``, from a watch's memory when
   its kind is watched (:mod:`kfctl.k8s.watch`), else with a GET, or with one LIST for several of a kind in a
   namespace — and at once when a watch reports that its object changed (:meth:`Run._object_changed`). Each
   verdict (:meth:`Run._after_check`) goes through :meth:`Run._judge`: ready, failed, or check again later.
4. :meth:`Run._ready` / :meth:`Run._fail` / :meth:`Run._block` end it; :meth:`Run._changed` then queues its
   dependents (back to 1).

Everything here runs on one thread; workers return values through the ``inbox``, and so do watches
(:class:`Changed`), so the loop sleeps until something happened or the next check or retry is due. The
loop stays linear in the number of objects (5,000 in the benchmarks): a step is looked at again only when
one of its dependencies changed state, its retry or check time came, its object changed, or an apply slot
freed — never by scanning every step on every turn. Nothing here prints: progress goes to the reporter as
:class:`~kfctl.engine.events.Event` values.
"""

from __future__ import annotations

import heapq
import queue
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from kfctl.engine.crdgate import CrdGate
from kfctl.engine.events import Event, EventType, Reporter
from kfctl.engine.probe import workload_problems
from kfctl.engine.result import ApplyOptions, ApplyResult, Failure
from kfctl.engine.retry import backoff
from kfctl.engine.steps import EngineStep, ObjectStep, engine_step
from kfctl.engine.work import Applied, Apply, Check, CheckBatch, Checked, CheckedMany, Finished, Work, Workers
from kfctl.health.model import Health, progressing, ready
from kfctl.k8s.errors import Immutable, KubeError, Transient
from kfctl.k8s.watch import WatchCache
from kfctl.objects import Obj, ObjectKey, meta_of
from kfctl.plan.graph import Plan, Step, application_id, topological_order
from kfctl.plan.priority import heights
from kfctl.plan.rules import never_recreated

State = Literal["pending", "applying", "waiting", "ready", "failed", "blocked"]
TERMINAL = ("ready", "failed", "blocked")
COALESCE_SECONDS = 0.25
# The longest the loop sleeps when nothing is due: with work in flight, and with none.
BUSY_WAKE = 0.2
IDLE_WAKE = 0.05
BATCH_MIN = 3  # due checks of one kind in one namespace that are cheaper as one LIST than as GETs
NOT_BATCHED = frozenset({"CustomResourceDefinition"})  # large objects; a LIST would return them all
# Watch a kind (one LIST + WATCH for the run) once this many of its objects wait on health: below that,
# the few GETs of polling cost less. CRDs are always watched: dozens are applied at once, and webhook
# backends with conversion webhooks read theirs on every check.
WATCH_MIN = 3
# How long after its apply a check waits for the watch to show kfctl's own write before reading the object
# from the server instead (a watch that lags that much, or lost track of it, is not worth waiting for).
WATCH_PATIENCE = 5.0
ALWAYS_WATCHED = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition")})


@dataclass
class Track:
    """One step's progress through the run."""

    step: Step
    kind: EngineStep  # what the step is, and so how it starts and is checked (kfctl.engine.steps)
    index: int  # position in topological order: queues hold these
    height: int = 0  # waits on the longest chain from it (kfctl.plan.priority): started first when slots are few
    state: State = "pending"
    started: float | None = None  # first apply attempt
    attempts: int = 0
    not_before: float = 0.0
    next_check: float = 0.0
    checking: bool = False
    recheck: bool = False  # its object changed while a check was out: check again when it is back
    health: Health | None = None
    last_message: str = ""
    live: Obj | None = None
    ready_at: float | None = None  # clock() when it became ready
    applied_at: float | None = None  # clock() when its last apply returned


@dataclass(frozen=True)
class Changed:
    """A watch saw ``key`` change."""

    key: ObjectKey


def _api_failure(fut: Future[Any]) -> KubeError | None:
    """The API failure a worker met, if any. Anything else is a bug in kfctl: raised, so that the CLI says
    so (exit 1) instead of reporting it as the API server's denial or an object's health."""
    err = fut.exception()
    if err is None:
        return None
    if not isinstance(err, KubeError):
        raise err
    return err


def _batches(due: list[Track], watched: Callable[[ObjectKey], bool]) -> list[Track | tuple[ObjectStep, ...]]:
    """Group due checks: objects of one namespaced kind in one namespace together (a tuple of them), the rest
    alone (their track). Objects of a watched kind are judged from memory, one by one at no cost."""
    groups: dict[tuple[str, str, str], list[tuple[Track, ObjectStep]]] = {}
    out: list[Track | tuple[ObjectStep, ...]] = []
    for t in due:
        step = t.kind
        if not isinstance(step, ObjectStep) or not step.key.namespace:
            out.append(t)
            continue
        if step.key.kind in NOT_BATCHED or watched(step.key):
            out.append(t)
            continue
        groups.setdefault((step.api_version, step.key.kind, step.key.namespace), []).append((t, step))
    for group in groups.values():
        if len(group) >= BATCH_MIN:
            out.append(tuple(step for _, step in group))
        else:
            out += [t for t, _ in group]
    return out


class Run:
    """The scheduler's state for one run of a plan, and the loop that drives it to the end."""

    def __init__(
        self,
        plan: Plan,
        *,
        options: ApplyOptions,
        result: ApplyResult,
        report: Reporter,
        workers: Workers,
        pool: ThreadPoolExecutor,
        watches: WatchCache,
        inbox: queue.SimpleQueue[Finished | Changed],
        clock: Callable[[], float],
    ) -> None:
        self.plan = plan
        self.options = options
        self.result = result
        self.report = report
        self.workers = workers
        self.pool = pool
        self.watches = watches
        self.inbox = inbox
        self.clock = clock
        self.order = topological_order(plan)
        self.dependents = plan.dependents()
        height = heights(plan, self.order, self.dependents)
        steps = [plan.steps[sid] for sid in self.order]
        self.tracks = {s.id: Track(s, engine_step(s, plan.wait_rules), i, height[s.id]) for i, s in enumerate(steps)}
        self.remaining = len(self.order)
        self.candidates: list[tuple[int, int]] = []  # heap: (-height, index) of pending steps worth a look
        self.queued: set[int] = set()
        self.retries: list[tuple[float, int]] = []  # heap: (not_before, index)
        self.checks: list[tuple[float, int]] = []  # heap: (next_check, index)
        self.in_flight: dict[Future[Any], Work] = {}
        self.applying = 0
        self.crd_gate = CrdGate()  # a few CRDs at a time reach Established sooner than eight (kfctl.engine.crdgate)
        self.denied = False
        self.app_objects = plan.sizes()  # a shared object is each of its applications' (plan.copies)
        self.unready = Counter(self.app_objects)  # application → objects not ready yet
        self.by_key = {t.kind.key: t for t in self.tracks.values() if isinstance(t.kind, ObjectStep)}
        self.waits_by_kind = Counter((s.key.group, s.key.kind) for s in plan.objects() if s.wait)
        self.reading: dict[tuple[str, str], list[Track]] = {}  # kind → steps whose check reads it besides their object
        for t in self.tracks.values():
            for kind in t.kind.reads():
                self.reading.setdefault(kind, []).append(t)

    # --- the loop --------------------------------------------------------------------------------------
    def loop(self) -> None:
        start = self.clock()
        deadline = start + self.options.timeout
        for sid in self.order:
            self.consider(sid)
        while self.remaining:
            now = self.clock()
            if now > deadline:
                self._time_out_all(f"the overall --timeout of {self.options.timeout:g}s")
                break
            while self.retries and self.retries[0][0] <= now:
                self.consider(self.order[heapq.heappop(self.retries)[1]])
            self._start_candidates(now)
            self._start_due_checks(now)
            if not self.remaining:
                break
            self._handle(self._next_messages(now))
            if self.denied and not any(isinstance(w, Apply) for w in self.in_flight.values()):
                self._stop_after_denial()
                break

    def _submit(self, work: Work) -> None:
        finished = work.start(self.workers, self.pool)
        self.in_flight[finished.future] = work
        finished.future.add_done_callback(lambda _f: self.inbox.put(finished))

    def _next_messages(self, now: float) -> list[Finished | Changed]:
        """Sleep until a worker finishes, a watch reports a change, or the next retry or check is due — whether
        or not work is in flight (a check due in 30 ms is started in 30 ms, not at the next worker's return).
        With nothing due the loop still turns every ``IDLE_WAKE`` (``BUSY_WAKE`` while work is in flight,
        which wakes it when it returns), to look at the overall deadline."""
        cap = BUSY_WAKE if self.in_flight else IDLE_WAKE
        next_due = [q[0][0] for q in (self.retries, self.checks) if q]
        timeout = min(cap, max(0.0, min(next_due) - now)) if next_due else cap
        out: list[Finished | Changed] = []
        try:
            out.append(self.inbox.get(timeout=timeout))
            while True:
                out.append(self.inbox.get_nowait())
        except queue.Empty:
            pass
        return out

    def _handle(self, messages: list[Finished | Changed]) -> None:
        for msg in messages:
            if isinstance(msg, Changed):
                self._object_changed(msg.key)
                continue
            del self.in_flight[msg.future]
            if isinstance(msg, Applied):
                self.applying -= 1
                self.denied = self._after_apply(self.tracks[msg.work.step.id], msg) or self.denied
            elif isinstance(msg, CheckedMany):
                self._after_check_many(msg)
            else:
                self._after_check(self.tracks[msg.work.step.id], msg)

    def consider(self, sid: str) -> None:
        t = self.tracks[sid]
        if t.index not in self.queued and t.state == "pending":
            self.queued.add(t.index)
            heapq.heappush(self.candidates, (-t.height, t.index))

    def _changed(self, t: Track) -> None:
        """A step changed state: count it when it is done, and look again at what depends on it."""
        if t.state in TERMINAL:
            self.remaining -= 1
            for sid in self.crd_gate.done(t.step.id):
                self.consider(sid)
        elif t.state == "waiting":
            heapq.heappush(self.checks, (t.next_check, t.index))
        for d in self.dependents[t.step.id]:
            self.consider(d)

    # --- starting applies --------------------------------------------------------------------------------
    def _start_candidates(self, now: float) -> None:
        """Look at queued pending steps, the longest chain of waits from them first, then in plan order;
        stop at the first that waits for an apply slot."""
        while self.candidates:
            _, i = heapq.heappop(self.candidates)
            self.queued.discard(i)
            t = self.tracks[self.order[i]]
            if t.state != "pending" or not self.crd_gate.admits(t.step):
                continue
            if self._maybe_start(t, now) == "full":
                self.consider(t.step.id)
                return

    def _maybe_start(self, t: Track, now: float) -> Literal["full"] | None:
        """Start a step whose dependencies allow it; "full" when it must wait for an apply slot.

        A step that cannot start yet is dropped from the queue: a dependency's change of state, or its
        retry time, puts it back.
        """
        edges = self.plan.deps.get(t.step.id, [])
        for e in edges:
            if self.tracks[e.dependency].state in ("failed", "blocked"):
                self._block(t, e.dependency)
                return None
        if self.denied or now < t.not_before:
            return None
        for e in edges:
            dep = self.tracks[e.dependency]
            if e.rule.order_only and dep.state in ("waiting", "ready"):
                continue
            if dep.state != "ready":
                return None
        return t.kind.start(self, t, now)

    # The three ways a step starts (kfctl.engine.steps.Starter): each kind of step picks its own.
    def start_apply(self, t: Track, step: ObjectStep, now: float) -> Literal["full"] | None:
        if self.applying >= self.options.concurrency:
            return "full"
        if t.started is None:
            t.started = now
            self.crd_gate.started(t.step)
        t.state = "applying"
        t.attempts += 1
        self.applying += 1
        self._submit(Apply(step))
        return None

    def start_waiting(self, t: Track, now: float) -> None:
        t.started = t.started if t.started is not None else now
        t.state = "waiting"
        t.next_check = now
        self._watch_if_worth_it(t)
        self._changed(t)

    def open_gate(self, t: Track, now: float) -> None:
        t.started = t.started if t.started is not None else now
        self._ready(t, ready("all objects ready"), quiet=True)

    # --- after an apply ------------------------------------------------------------------------------------
    def _after_apply(self, t: Track, done: Applied) -> bool:
        """Record an apply's outcome; True when the API server denied it (the run stops)."""
        step = done.work.step
        err = _api_failure(done.future)
        if err is not None:
            return self._apply_error(t, step, err)
        outcome = done.future.result()
        t.live = outcome.live
        t.applied_at = self.clock()
        uid = meta_of(outcome.live).get("uid")
        if uid:
            self.result.uids[step.key] = str(uid)
        events: dict[str, tuple[EventType, list[str]]] = {
            "created": ("Created", self.result.created),
            "configured": ("Configured", self.result.configured),
            "corrected": ("Corrected", self.result.corrected),
            "adopted": ("Adopted", self.result.adopted),
            "unchanged": ("Unchanged", self.result.unchanged),
            "recreated": ("Recreated", self.result.recreated),
        }
        event, bucket = events[outcome.verdict]
        bucket.append(t.step.id)
        self._emit(event, t.step, outcome.message)
        if not t.step.wait:
            self._ready(t, ready("applied"), quiet=True)
        elif outcome.health is not None:
            t.state = "waiting"
            for d in self.dependents[t.step.id]:  # order-only dependents may start now
                self.consider(d)
            self._judge(t, outcome.health)
        else:
            t.state = "waiting"
            t.next_check = self.clock()
            self._watch_if_worth_it(t)
            self._changed(t)
        return False

    def _apply_error(self, t: Track, step: ObjectStep, err: KubeError) -> bool:
        """Retry a transient failure, else fail the step; True when the API server denied it (the run stops)."""
        now = self.clock()
        said = err.explanation
        if isinstance(err, Transient):
            elapsed = now - (t.started or now)
            if elapsed > self.options.wait_timeout:
                self._fail(t, f"still failing after {elapsed:.0f}s: {said}")
                return False
            delay = backoff(t.attempts, retry_after=err.retry_after)
            t.state = "pending"
            t.not_before = now + delay
            heapq.heappush(self.retries, (t.not_before, t.index))
            if said != t.last_message:
                t.last_message = said
                self._emit("Retrying", t.step, f"{said} (retrying in {delay:.1f}s)")
            return False
        if isinstance(err, Immutable):
            key = step.key
            why_not = never_recreated(key.group, key.kind)
            fix = (
                f"kfctl never recreates it ({why_not}): change it back in the source, or migrate by hand"
                if why_not
                else "re-run with --recreate-immutable to delete and recreate it"
            )
            self._fail(t, f"immutable field(s) changed: {', '.join(err.fields)}; {fix} ({said})", denied=True)
            return True
        self._fail(t, said, denied=True)
        return True

    # --- checking health -----------------------------------------------------------------------------------
    def _watch_if_worth_it(self, t: Track) -> None:
        """A waiting step will be checked: watch its object's kind when enough objects of it wait (see
        WATCH_MIN), and the kinds its check reads besides (a backend's Service, a PVC's StorageClasses),
        which it would otherwise read on every check."""
        if isinstance(t.kind, ObjectStep):
            key = t.kind.key
            own = (key.group, key.kind)
            if own in ALWAYS_WATCHED or self.waits_by_kind[own] >= WATCH_MIN:
                self.watches.watch(t.kind.api_version, key.kind)
        for group, kind in t.kind.reads():
            self.watches.watch("", kind, group=group)

    def _watched(self, key: ObjectKey) -> bool:
        return self.watches.watching(key.group, key.kind)

    def _start_due_checks(self, now: float) -> None:
        due: list[Track] = []
        # Checks due soon are taken along with the due ones, so that more of them share a LIST.
        horizon = now + COALESCE_SECONDS if self.checks and self.checks[0][0] <= now else now
        while self.checks and self.checks[0][0] <= horizon:
            when, i = heapq.heappop(self.checks)
            t = self.tracks[self.order[i]]
            if t.state != "waiting" or t.checking or when != t.next_check:
                continue  # done, being checked, or moved earlier by a change (a newer entry is queued)
            if t.started is not None and now - t.started > self.options.wait_timeout:
                self._fail(t, self._timeout_message(t))
                continue
            t.checking = True
            due.append(t)
        for batch in _batches(due, self._watched):
            if isinstance(batch, Track):
                patient = batch.applied_at is not None and now - batch.applied_at < WATCH_PATIENCE
                self._submit(Check(batch.kind, wait_for_watch=patient))
            else:
                self._submit(CheckBatch(batch))

    def _object_changed(self, key: ObjectKey) -> None:
        """A watch saw ``key`` change: check what waits on it now rather than at its next poll."""
        t = self.by_key.get(key)
        for w in ([t] if t is not None else []) + self.reading.get((key.group, key.kind), []):
            if w.state != "waiting":
                continue
            if w.checking:
                w.recheck = True
            elif w.next_check > self.clock():
                w.next_check = self.clock()
                heapq.heappush(self.checks, (w.next_check, w.index))

    def _after_check(self, t: Track, done: Checked) -> None:
        t.checking = False
        err = _api_failure(done.future)
        if err is not None:
            if not isinstance(err, Transient):
                self._fail(t, err.explanation)
                return
            h = progressing(err.explanation)
        else:
            verdict = done.future.result()
            if verdict is None:  # no news: the watch has not shown our write yet and will report it
                self._check_later(t)
                return
            h = verdict
        self._judge(t, h)

    def _after_check_many(self, done: CheckedMany) -> None:
        err = _api_failure(done.future)
        verdicts = {} if err is not None else done.future.result()
        for step in done.work.steps:
            t = self.tracks[step.id]
            t.checking = False
            if t.state != "waiting":
                continue
            if err is not None:
                if not isinstance(err, Transient):
                    self._fail(t, err.explanation)
                    continue
                self._judge(t, progressing(err.explanation))
            else:
                self._judge(t, verdicts[step.id])

    def _judge(self, t: Track, h: Health) -> None:
        """Act on a waiting step's health verdict: ready, failed, or check again later."""
        t.health = h
        if h.ready:
            self._ready(t, h)
            return
        if h.failed:
            self._fail(t, h.message)
            return
        if h.message != t.last_message:
            t.last_message = h.message
            self._emit("Waiting", t.step, h.message)
        self._watch_if_worth_it(t)
        self._check_later(t)

    def _check_later(self, t: Track) -> None:
        """Schedule the next check: a quarter second, backing off to poll_interval; at once when the object
        changed while the last check was out."""
        now = self.clock()
        waited = now - (t.started or now)
        t.next_check = now + min(self.options.poll_interval, 0.25 + waited / 10)
        if t.recheck:  # its object changed while this check was out: the verdict may be stale already
            t.recheck = False
            t.next_check = now
        heapq.heappush(self.checks, (t.next_check, t.index))

    # --- outcomes ----------------------------------------------------------------------------------------
    def _ready(self, t: Track, h: Health, *, quiet: bool = False) -> None:
        t.state = "ready"
        t.health = h
        t.ready_at = self.clock()
        if not quiet:
            self._emit("Healthy", t.step, h.message)
        if isinstance(t.kind, ObjectStep):
            for app in self.plan.applications_of(t.step.id):
                self.unready[app] -= 1
                if not self.unready[app]:  # the application's last object: say so, once
                    n = self.app_objects[app]
                    message = f"all {n} objects ready" if n != 1 else "its 1 object ready"
                    self.report(Event("Healthy", application_id(app), message, app=app))
        self._changed(t)

    def _fail(self, t: Track, message: str, *, denied: bool = False) -> None:
        t.state = "failed"
        detail = message
        if isinstance(t.kind, ObjectStep) and t.live is not None and not denied:
            try:
                problems = workload_problems(self.workers.cluster, t.kind.key, t.live)
            except Exception:  # diagnosis is best effort; never mask the failure itself
                problems = []
            if problems:
                detail = f"{message}: {'; '.join(problems)}"
        t.last_message = detail
        chain = (f"{t.step.id} {detail}",)
        self.result.failed.append(Failure(t.step.id, detail, chain, denied=denied))
        self._emit("Failed", t.step, detail, chain=chain)
        self._changed(t)

    def _block(self, t: Track, dep: str) -> None:
        t.state = "blocked"
        chain = (t.step.id, *self._chain(dep))
        msg = "behind " + " ← ".join(chain[1:])
        self.result.blocked.append(Failure(t.step.id, msg, chain))
        self._emit("Blocked", t.step, msg, chain=chain)
        self._changed(t)

    def _first_unready_dependency(self, sid: str) -> str | None:
        return next(
            (e.dependency for e in self.plan.deps.get(sid, []) if self.tracks[e.dependency].state != "ready"), None
        )

    def _chain(self, sid: str) -> tuple[str, ...]:
        """From a step to the root cause: follow the first dependency that is not ready."""
        out: list[str] = []
        seen: set[str] = set()
        while sid not in seen:
            seen.add(sid)
            t = self.tracks[sid]
            nxt = self._first_unready_dependency(sid)
            if nxt is None or t.state == "failed":
                out.append(f"{sid} {t.last_message}".rstrip())
                break
            out.append(sid)
            sid = nxt
        return tuple(out)

    def _timeout_message(self, t: Track) -> str:
        why = t.last_message or (t.health.message if t.health else "no status")
        return f"not healthy after --wait-timeout {self.options.wait_timeout:g}s: {why}"

    def _time_out_all(self, what: str) -> None:
        for sid in self.order:
            t = self.tracks[sid]
            if t.state in ("waiting", "applying"):
                self._fail(t, f"not healthy within {what}: {t.last_message or 'no status'}")
        for sid in self.order:
            t = self.tracks[sid]
            if t.state == "pending":
                dep = self._first_unready_dependency(sid)
                if dep is not None:
                    self._block(t, dep)
                else:
                    self._fail(t, f"not applied within {what}: {t.last_message}")

    def _stop_after_denial(self) -> None:
        for sid in self.order:
            t = self.tracks[sid]
            if t.state in TERMINAL:
                continue
            t.state = "blocked"
            chain = (sid, "not attempted: the run stopped after the API server denied a request")
            self.result.blocked.append(Failure(sid, chain[1], chain))
            self._emit("Skipped", t.step, chain[1])

    def _emit(self, kind: EventType, step: Step, message: str = "", *, chain: tuple[str, ...] = ()) -> None:
        also_in = self.plan.copies.get(step.id, ())  # a live view counts a shared object under each application
        self.report(Event(kind, step.id, message, app=step.app, chain=chain, also_in=also_in))
