"""One run at a time per install: a ``coordination.k8s.io`` Lease held while apply, delete or prune runs.

Two runs of one install that overlap would each write an inventory the other did not see and prune what
the other just applied. So every run that writes takes the install's Lease (``kfctl-lock-<install>`` in the
inventory's namespace) first, renews it while it runs and frees it at the end; a second run waits a short,
configurable time, then stops naming the holder (host, pid, command, since). The holder's record is the
Lease itself, so ``kubectl get lease -n NS kfctl-lock-NAME -o yaml`` shows it while a run holds it; the run
removes it at the end (only if nobody took it over meanwhile), so a finished or refused run leaves nothing
behind. Its requests are counted apart from the platform's writes, so an untouched re-apply still reports 0
write requests.

A holder that died without freeing the Lease (kill -9, a lost laptop) stops renewing it. As client-go's
leader election does, a waiting run takes it over only after watching it go unrenewed for the lease's
duration on its own clock, which no clock skew between machines can shorten; a Lease whose renew time is
long past even on a skewed clock (more than ``STALE_AFTER``) is taken at once, so a run killed an hour ago
does not make the next one wait. Taking and renewing use the API's optimistic concurrency (create fails on
an existing Lease, update on a stale resourceVersion), so two waiting runs never both win.

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

from kfctl.engine.events import Event, Reporter
from kfctl.errors import LockedError
from kfctl.k8s.api import ApiError, Cluster
from kfctl.objects import Obj

API_VERSION = "coordination.k8s.io/v1"
DURATION = 20  # seconds a Lease stays valid without renewal
RENEW_EVERY = DURATION / 4
STALE_AFTER = 10 * 60  # a renew time this far in the past is dead whatever the clocks say
COMMAND_ANNOTATION = "kfctl.kubeflow.org/command"
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

    def describe(self) -> str:
        parts = self.identity.split("/")
        who = f"host {parts[0]}, pid {parts[1]}" if len(parts) >= 2 else self.identity
        return f"`kfctl {self.command or '?'}` ({who}) since {self.since or '?'} (last renewed {self.renewed or '?'})"


def holder_of(lease: Obj) -> Holder | None:
    spec = lease.get("spec") or {}
    identity = str(spec.get("holderIdentity") or "")
    if not identity:
        return None
    notes = (lease.get("metadata") or {}).get("annotations") or {}
    return Holder(
        identity,
        str(notes.get(COMMAND_ANNOTATION, "")),
        str(spec.get("acquireTime") or ""),
        str(spec.get("renewTime") or ""),
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
        self.held: Obj | None = None
        self.where = f"Lease {namespace}/{self.name}"

    def _get(self) -> Obj | None:
        return self.cluster.get(API_VERSION, "Lease", namespace=self.namespace, name=self.name)

    def _mine(self, lease: Obj | None, transitions: int) -> Obj:
        now = _now()
        meta: dict[str, object] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {LABEL: "kfctl"},
            "annotations": {COMMAND_ANNOTATION: self.command},
        }
        if lease is not None:
            meta["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion")
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": DURATION,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }
        return {"apiVersion": API_VERSION, "kind": "Lease", "metadata": meta, "spec": spec}

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
        except ApiError as e:
            if e.status == 409:  # another run created or updated it first
                return False
            raise

    def acquire(self, wait: float) -> None:
        deadline = self.clock() + wait
        seen: tuple[str, str] | None = None  # (resourceVersion, renewTime) as first observed
        seen_at = self.clock()
        announced = False
        while True:
            lease = self._get()
            holder = holder_of(lease) if lease is not None else None
            expired = False
            if lease is not None and holder is not None:
                mark = (str((lease.get("metadata") or {}).get("resourceVersion")), holder.renewed)
                if mark != seen:
                    seen, seen_at = mark, self.clock()
                duration = float((lease.get("spec") or {}).get("leaseDurationSeconds") or DURATION)
                age = _age(holder.renewed)
                expired = self.clock() - seen_at >= duration or (age is not None and age > STALE_AFTER)
            if self.try_take(lease, expired=expired):
                if expired and holder is not None:
                    self.reporter(
                        Event("Inventory", "lock", f"took over {self.where}: {holder.describe()} stopped renewing it")
                    )
                return
            if holder is None:
                continue  # lost a race for a free Lease: look again at once
            if self.clock() >= deadline:
                raise LockedError(
                    f"another kfctl run holds this install's lock: {holder.describe()}; {self.where}",
                    hint=(
                        "wait for it to finish and run again, or give it longer with --lock-timeout; if that run "
                        f"was killed, the lock frees itself {DURATION}s after its last renewal"
                    ),
                )
            if not announced:
                self.reporter(Event("Waiting", "lock", f"held by {holder.describe()}; waiting up to {wait:.0f}s"))
                announced = True
            self.sleep(min(1.0, max(0.0, deadline - self.clock())))

    def renew(self) -> str:
        """Renew the Lease: "" while it is ours, else why not ("taken", or "gone" with its namespace)."""
        lease = self.held
        if lease is None:
            return "gone"
        spec = dict(lease.get("spec") or {})
        spec["renewTime"] = _now()
        try:
            self.held = self.cluster.replace({**lease, "spec": spec})
        except ApiError as e:
            if e.status in (404, 409):
                self.held = None
                return "gone" if e.status == 404 else "taken"
            raise
        return ""

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
) -> Iterator[None]:
    """Hold the install's Lease for the block: wait up to ``wait`` seconds for another run to free it, renew
    it in the background, free it at the end (an error or Ctrl-C included). Raises LockedError naming the
    holder when it stays taken."""
    lock = _Lock(
        cluster, install=install, namespace=namespace, command=command, reporter=reporter, clock=clock, sleep=sleep
    )
    lock.acquire(wait)
    stop = threading.Event()

    def keep_renewing() -> None:
        while not stop.wait(renew_every):
            try:
                lost = lock.renew()
                if lost == "taken":  # another run judged it expired: this one was stalled for too long
                    reporter(Event("Retrying", "lock", f"{lock.where} was taken over by another run"))
                if lost:  # "gone": deleted with its namespace (kfctl delete), nothing left to hold
                    return
            except Exception as e:  # a missed renewal is retried at the next tick
                reporter(Event("Retrying", "lock", f"renewing {lock.where}: {e}"))

    renewer = threading.Thread(target=keep_renewing, name="kfctl-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        try:
            lock.release()
        except Exception as e:  # never hide the run's own outcome: the Lease expires by itself
            reporter(Event("Retrying", "lock", f"could not free {lock.where} ({e}); it expires in {DURATION}s"))
