"""One run at a time per install: a ``coordination.k8s.io`` Lease held while apply, delete or prune runs.

Two runs of one install that overlap would each write an inventory the other did not see and prune what
the other just applied. So every run that writes takes the install's Lease (``kfctl-lock-<install>`` in the
inventory's namespace) first, renews it while it runs and frees it at the end; a second run waits a short,
configurable time, then stops naming the holder (host, pid, command, since). The holder's record is the
Lease itself, so ``kubectl get lease -n NS kfctl-lock-NAME -o yaml`` shows it while a run holds it; the run
removes it at the end (only if nobody took it over meanwhile), so a finished or refused run leaves nothing
behind. Its requests are counted apart from the platform's writes, so an untouched re-apply still reports 0
write requests.

A holder that died without freeing the Lease (kill -9, a lost laptop) stops renewing it. When it ran on this
machine, its Lease names its process (:mod:`kfctl.engine.process_record`), and a run that finds that process ended
takes the Lease at once. Otherwise, as client-go's leader election does, a waiting run takes it over only after
watching it go unrenewed for the lease's duration on its own clock, which no clock skew between machines can
shorten; a Lease whose renew time is long past even on a skewed clock (more than ``STALE_AFTER``) is taken at
once, so a run killed an hour ago does not make the next one wait. That second rule compares the holder's wall
clock (the renewTime it wrote) with ours, so it assumes the machines' clocks are within ``STALE_AFTER`` (10
minutes) of each other: a holder whose clock runs more than that behind would have its live Lease taken. Taking
and renewing use the API's optimistic concurrency (create fails on an existing Lease, update on a stale
resourceVersion), so two waiting runs never both win.

A request whose reply is lost (a read timeout) may still have been stored, so a conflict on renewal, or a
request that failed in transit, is judged by reading the Lease again: still under this run's identity, it
is this run's (with a newer resourceVersion); only another identity, or no Lease at all, means it is lost
(no Lease in a namespace being deleted is no loss: no other run can take one there). Taking the Lease
rides out transient API failures (a restarting API server, throttling) until the wait ends, like every
other step. A run that really lost its Lease (suspended for longer than the lease's duration, cut off by a
partition) while another run took it over must not go on writing: the block gets a :class:`Held` whose
``check`` the caller runs before each step that would race the other run (pruning, recording the
inventory).

This module only talks to the API through :class:`~kfctl.k8s.api.Cluster` and reports through events.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

from kfctl.engine import process_record
from kfctl.engine.events import Event, Reporter
from kfctl.engine.retry import backoff
from kfctl.errors import LockedError
from kfctl.k8s.api import ApiError, Cluster, Unreachable
from kfctl.k8s.errors import AlreadyExists, Conflict, OptimisticLock, Transient
from kfctl.objects import Obj, meta_of

API_VERSION = "coordination.k8s.io/v1"
DURATION = 20  # seconds a Lease stays valid without renewal
RENEW_EVERY = DURATION / 4
STALE_AFTER = 10 * 60  # a renew time this far in the past is dead whatever the clocks say
COMMAND_ANNOTATION = "kfctl.kubeflow.org/command"
PROCESS_ANNOTATION = "kfctl.kubeflow.org/holder-process"  # kfctl.engine.process_record; absent off Linux
LABEL = "app.kubernetes.io/managed-by"


def lease_name(install: str) -> str:
    return f"kfctl-lock-{install}"


@dataclass(frozen=True)
class Holder:
    """Who holds a Lease, from the Lease itself."""

    identity: str  # "<host>/<pid>/<run>": a run, not a process (two threads of one process are two runs)
    command: str
    since: str  # acquireTime as the holder wrote it
    renewed: str
    process: str = ""  # its process on its machine (kfctl.engine.process_record), "" when not recorded

    def describe(self) -> str:
        parts = self.identity.split("/")
        who = f"host {parts[0]}, pid {parts[1]}" if len(parts) >= 2 else self.identity
        return f"`kfctl {self.command or '?'}` ({who}) since {self.since or '?'} (last renewed {self.renewed or '?'})"


def holder_of(lease: Obj) -> Holder | None:
    spec = lease.get("spec") or {}
    identity = str(spec.get("holderIdentity") or "")
    if not identity:
        return None
    notes = meta_of(lease).get("annotations") or {}
    return Holder(
        identity,
        str(notes.get(COMMAND_ANNOTATION, "")),
        str(spec.get("acquireTime") or ""),
        str(spec.get("renewTime") or ""),
        str(notes.get(PROCESS_ANNOTATION, "")),
    )


@dataclass
class Held:
    """The run's hold on its install's Lease, as the block sees it. ``lost`` is set (by the renewer) when
    another run took the Lease over or it was deleted; ``check`` stops the run before a step that would race
    the other run."""

    where: str
    command: str
    lost: str = ""  # how the Lease was lost, completing "this run lost the install's lock …"; "" while held

    def check(self, before: str) -> None:
        """Raise LockedError when the Lease is no longer this run's; ``before`` names the step not taken."""
        if self.lost:
            raise LockedError(
                f"this run lost the install's lock {self.lost}; it stopped before {before}; {self.where}",
                hint=f"run kfctl {self.command} again: it waits for the other run to finish, then resumes",
            )


def _now() -> str:
    """A MicroTime, as the API wants it for acquireTime/renewTime."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _age(stamp: str) -> float | None:
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (datetime.now(timezone.utc) - then).total_seconds()


class _Lock:
    def __init__(
        self,
        cluster: Cluster,
        *,
        install: str,
        namespace: str,
        command: str,
        reporter: Reporter,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self.cluster = cluster
        self.name = lease_name(install)
        self.namespace = namespace
        self.command = command
        self.reporter = reporter
        self.clock = clock
        self.sleep = sleep
        self.identity = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self.process = process_record.this_process()
        self.held: Obj | None = None
        self.where = f"Lease {namespace}/{self.name}"
        self.handle = Held(self.where, command)

    def _get(self) -> Obj | None:
        return self.cluster.get(API_VERSION, "Lease", namespace=self.namespace, name=self.name)

    def _mine(self, lease: Obj | None, transitions: int) -> Obj:
        now = _now()
        meta: dict[str, object] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {LABEL: "kfctl"},
            "annotations": {COMMAND_ANNOTATION: self.command}
            | ({PROCESS_ANNOTATION: self.process} if self.process else {}),
        }
        if lease is not None:
            meta["resourceVersion"] = meta_of(lease).get("resourceVersion")
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": DURATION,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }
        return {"apiVersion": API_VERSION, "kind": "Lease", "metadata": meta, "spec": spec}

    def _ours(self, lease: Obj | None) -> bool:
        return lease is not None and str((lease.get("spec") or {}).get("holderIdentity") or "") == self.identity

    def try_take(self, lease: Obj | None, *, expired: bool) -> bool:
        """Take the Lease if it is free (or expired); False when another run holds it or won the race."""
        try:
            if lease is None:
                self.held = self.cluster.create(self._mine(None, 0))
                return True
            holder = holder_of(lease)
            if holder is not None and not expired:
                return False
            transitions = int((lease.get("spec") or {}).get("leaseTransitions") or 0) + (1 if holder else 0)
            self.held = self.cluster.replace(self._mine(lease, transitions))
            return True
        except (AlreadyExists, OptimisticLock, Conflict):  # another run created or updated it first
            return False

    def acquire(self, wait: float) -> None:
        deadline = self.clock() + wait
        seen: tuple[str, str] | None = None  # (resourceVersion, renewTime) as first observed
        seen_at = self.clock()
        announced = False
        failures = 0
        while True:
            try:
                lease = self._get()
                if self._ours(lease):  # an earlier take was stored, though its reply was lost
                    self.held = lease
                    break
                holder = holder_of(lease) if lease is not None else None
                expired = ended_here = False
                if lease is not None and holder is not None:
                    mark = (str(meta_of(lease).get("resourceVersion")), holder.renewed)
                    if mark != seen:
                        seen, seen_at = mark, self.clock()
                    duration = float((lease.get("spec") or {}).get("leaseDurationSeconds") or DURATION)
                    age = _age(holder.renewed)
                    ended_here = bool(holder.process) and process_record.ended(holder.process)
                    expired = (
                        ended_here or self.clock() - seen_at >= duration or (age is not None and age > STALE_AFTER)
                    )
                if self.try_take(lease, expired=expired):
                    if expired and holder is not None:
                        why = "ended on this machine without freeing it" if ended_here else "stopped renewing it"
                        self.reporter(Event("Inventory", "lock", f"took over {self.where}: {holder.describe()} {why}"))
                        return
                    break
            except (ApiError, Unreachable) as e:  # a restarting API server, throttling: as every step does
                failures += 1
                if not isinstance(e, Transient) or self.clock() >= deadline:
                    raise
                delay = min(backoff(failures, retry_after=e.retry_after), max(0.0, deadline - self.clock()))
                said = e.explanation
                self.reporter(Event("Retrying", "lock", f"taking {self.where}: {said} (retrying in {delay:.1f}s)"))
                self.sleep(delay)
                continue
            if holder is None:
                continue  # lost a race for a free Lease: look again at once
            if self.clock() >= deadline:
                raise LockedError(
                    f"another kfctl run holds this install's lock: {holder.describe()}; {self.where}",
                    hint=(
                        "wait for it to finish and run again, or give it longer with --lock-timeout; if that run "
                        f"was killed on another machine, the lock frees itself {DURATION}s after its last renewal (a "
                        "run killed on this machine frees it at once)"
                    ),
                )
            if not announced:
                self.reporter(Event("Waiting", "lock", f"held by {holder.describe()}; waiting up to {wait:.0f}s"))
                announced = True
            self.sleep(min(1.0, max(0.0, deadline - self.clock())))
        if announced or failures:  # ends the "waiting for the lock" the CLI shows
            self.reporter(Event("Inventory", "lock", f"took {self.where}"))

    def _renewed(self, lease: Obj) -> Obj:
        spec = dict(lease.get("spec") or {})
        spec["renewTime"] = _now()
        return self.cluster.replace({**lease, "spec": spec})

    def renew(self) -> None:
        """Renew the Lease while it is this run's. When it is not any more, ``held`` becomes None and
        ``handle.lost`` says how, unless it went with its namespace (kfctl delete removed it)."""
        lease = self.held
        if lease is None:
            return
        try:
            self.held = self._renewed(lease)
            return
        except (ApiError, Unreachable) as e:
            # A conflict may be this run's own renewal, stored though its reply was lost (a read timeout), and a
            # request that failed in transit may have been stored too: only the Lease as it is now tells.
            if not isinstance(e, Transient):
                raise
        current = self._get()
        if current is not None and self._ours(current):
            self.held = self._renewed(current)
            return
        lost = self._how_lost(current)
        self.held = None
        self.handle.lost = lost

    def _how_lost(self, current: Obj | None) -> str:
        """How the Lease stopped being this run's, completing "this run lost the install's lock …"; "" when it
        went with its namespace: nothing can be created in a namespace being deleted, so no other run holds it."""
        if current is None:
            ns = self.cluster.get("v1", "Namespace", namespace="", name=self.namespace)
            if ns is None or (ns.get("status") or {}).get("phase") == "Terminating":
                return ""
            return "when another client deleted the Lease"
        holder = holder_of(current)
        if holder is None:
            return "when another client cleared the Lease's holder"
        return f"to {holder.describe()}: this run had stopped renewing it for longer than {DURATION}s"

    def release(self) -> None:
        """Remove the Lease, unless another run took it over meanwhile: a run leaves nothing behind."""
        lease = self.held
        self.held = None
        if lease is None:
            return
        try:
            self.cluster.delete_unchanged(lease)
        except ApiError as e:
            if e.status not in (404, 409):  # gone with its namespace, or no longer ours: nothing to free
                raise


@contextmanager
def install_lock(
    cluster: Cluster,
    *,
    install: str,
    namespace: str,
    command: str,
    wait: float,
    reporter: Reporter,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    renew_every: float = RENEW_EVERY,
) -> Iterator[Held]:
    """Hold the install's Lease for the block: wait up to ``wait`` seconds for another run to free it, renew
    it in the background, free it at the end (an error or Ctrl-C included). Raises LockedError naming the
    holder when it stays taken. The block gets a :class:`Held`: call its ``check`` before a step that must
    not race another run, as this run may lose the Lease while it runs."""
    lock = _Lock(
        cluster, install=install, namespace=namespace, command=command, reporter=reporter, clock=clock, sleep=sleep
    )
    lock.acquire(wait)
    stop = threading.Event()

    def keep_renewing() -> None:
        while not stop.wait(renew_every):
            try:
                lock.renew()
            except Exception as e:  # a missed renewal is retried at the next tick
                reporter(Event("Retrying", "lock", f"renewing {lock.where}: {e}"))
                continue
            if lock.held is None:  # lost, or deleted with its namespace (kfctl delete): nothing left to hold
                if lock.handle.lost:
                    reporter(
                        Event(
                            "Failed",
                            "lock",
                            f"this run lost the install's lock {lock.handle.lost}; "
                            "it stops before its next prune or inventory write",
                        )
                    )
                return

    renewer = threading.Thread(target=keep_renewing, name="kfctl-lease", daemon=True)
    renewer.start()
    try:
        yield lock.handle
    finally:
        stop.set()
        renewer.join()
        try:
            lock.release()
        except Exception as e:  # never hide the run's own outcome: the Lease expires by itself
            reporter(Event("Retrying", "lock", f"could not free {lock.where} ({e}); it expires in {DURATION}s"))
