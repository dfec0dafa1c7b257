"""One run at a time per install: the Lease is taken, waited for, taken over when dead, and always freed."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from fakecluster import FakeCluster

from kfctl.engine.events import EventLog
from kfctl.engine.lease import API_VERSION, DURATION, PROCESS_ANNOTATION, STALE_AFTER, install_lock, lease_name
from kfctl.engine.process_record import this_process
from kfctl.errors import LockedError
from kfctl.k8s.api import ApiError, Unreachable
from kfctl.objects import Obj, ObjectKey

KEY = ObjectKey("coordination.k8s.io", "Lease", "kubeflow", lease_name("demo"))
ME = this_process() or ""  # this test's own process, as a lock holder records it (Linux)


class Clock:
    """A clock the test moves: sleeping advances it, so waits take no real time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.01)


def stamp(seconds_ago: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease(holder: str | None, *, renewed_ago: float = 1.0, process: str = "") -> Obj:
    notes = {"kfctl.kubeflow.org/command": "apply"} | ({PROCESS_ANNOTATION: process} if process else {})
    return {
        "apiVersion": API_VERSION,
        "kind": "Lease",
        "metadata": {
            "name": KEY.name,
            "namespace": "kubeflow",
            "resourceVersion": "7",
            "annotations": notes,
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": DURATION,
            "acquireTime": "2026-11-24T02:00:00.000000Z",
            "renewTime": stamp(renewed_ago),
            "leaseTransitions": 0,
        },
    }


def hold(cluster: FakeCluster, clock: Clock, log: EventLog, *, wait: float) -> None:
    with install_lock(
        cluster,
        install="demo",
        namespace="kubeflow",
        command="apply",
        wait=wait,
        reporter=log,
        clock=clock,
        sleep=clock.sleep,
        renew_every=3600,
    ):
        live = cluster.live(KEY)
        assert live is not None and live["spec"]["holderIdentity"].split("/")[1] == str(os.getpid())


@pytest.mark.parametrize(
    ("existing", "waited"),
    [
        # Each lease is made when its test runs: its renew time is "seconds ago" from then, not from collection
        # (a slow suite reached these rows more than STALE_AFTER after collecting them).
        pytest.param(lambda: None, 0.0, id="no-lease-yet-created"),
        pytest.param(lambda: lease(None), 0.0, id="a-lease-without-holder-is-taken-at-once"),
        pytest.param(
            lambda: lease("gone-host/1", renewed_ago=STALE_AFTER + 60), 0.0, id="long-dead-holder-taken-at-once"
        ),
        pytest.param(lambda: lease("gone-host/1"), float(DURATION), id="silent-holder-taken-after-a-lease-duration"),
        pytest.param(
            lambda: lease("here/4242", process=f"{ME.rsplit('/', 1)[0]}/1"),  # this pid, started at another time
            0.0,
            id="a-holder-that-ended-on-this-machine-taken-at-once",
        ),
        pytest.param(
            lambda: lease("here/4242", process=ME),  # this very process: alive
            float(DURATION),
            id="a-holder-still-running-here-taken-only-after-a-lease-duration",
        ),
    ],
)
def test_the_lock_is_taken_when_free_or_when_its_holder_stopped_renewing(
    existing: Callable[[], Obj | None], waited: float
) -> None:
    cluster, clock, log = FakeCluster(), Clock(), EventLog()
    made = existing()
    if made is not None:
        cluster.put(made)
    hold(cluster, clock, log, wait=60)
    assert clock.now - 1000.0 == pytest.approx(waited, abs=1.1)
    assert cluster.live(KEY) is None  # removed: the run leaves nothing behind
    assert cluster.stats.writes == 0 and cluster.stats.lock_writes >= 2  # not counted as platform writes


def test_taking_over_from_a_holder_that_ended_here_says_so() -> None:
    cluster, clock, log = FakeCluster(), Clock(), EventLog()
    dead = lease("build-7/4242/0a1b2c3d", process=f"{ME.rsplit('/', 1)[0]}/1")
    cluster.put(dead)
    hold(cluster, clock, log, wait=60)
    assert [e.message for e in log.events if e.subject == "lock"] == [
        f"took over Lease kubeflow/{KEY.name}: `kfctl apply` (host build-7, pid 4242) since "
        f"2026-11-24T02:00:00.000000Z (last renewed {dead['spec']['renewTime']}) "
        "ended on this machine without freeing it"
    ]


def test_a_live_holder_makes_the_next_run_wait_then_stop_naming_it() -> None:
    cluster, clock, log = FakeCluster(), Clock(), EventLog()
    cluster.put(lease("build-7/4242/0a1b2c3d"))

    def renewing_holder(seconds: float) -> None:  # the holder renews while we wait
        clock.sleep(seconds)
        live = cluster.live(KEY)
        assert live is not None
        live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
        live["spec"]["renewTime"] = stamp(0)

    lock = install_lock(
        cluster,
        install="demo",
        namespace="kubeflow",
        command="apply",
        wait=5,
        reporter=log,
        clock=clock,
        sleep=renewing_holder,
    )
    with pytest.raises(LockedError) as info, lock:
        pytest.fail("the lock was taken from a live holder")
    assert info.value.exit_code == 12
    assert info.value.message.startswith(
        "another kfctl run holds this install's lock: `kfctl apply` (host build-7, pid 4242) since "
        "2026-11-24T02:00:00.000000Z (last renewed "
    )
    assert info.value.message.endswith("; Lease kubeflow/kfctl-lock-demo")
    assert "--lock-timeout" in (info.value.hint or "")
    assert [e.message.split(";")[1] for e in log.of("Waiting")] == [" waiting up to 5s"]


def test_two_runs_at_once_one_holds_while_the_other_waits_and_then_proceeds() -> None:
    cluster = FakeCluster()
    order: list[str] = []
    inside = threading.Event()
    leave = threading.Event()

    def first() -> None:
        with install_lock(cluster, install="demo", namespace="kubeflow", command="apply", wait=5, reporter=EventLog()):
            order.append("first in")
            inside.set()
            leave.wait(5)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    inside.wait(5)
    log = EventLog()
    threading.Timer(0.3, leave.set).start()
    with install_lock(cluster, install="demo", namespace="kubeflow", command="delete", wait=5, reporter=log):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]
    assert len(log.of("Waiting")) == 1


def test_the_lock_is_freed_when_the_run_fails() -> None:
    cluster = FakeCluster()
    lock = install_lock(cluster, install="demo", namespace="kubeflow", command="apply", wait=1, reporter=EventLog())
    with pytest.raises(RuntimeError), lock:
        raise RuntimeError("the run failed")
    assert cluster.live(KEY) is None


def test_the_lease_is_renewed_while_the_run_lasts() -> None:
    cluster = FakeCluster()
    with install_lock(
        cluster, install="demo", namespace="kubeflow", command="apply", wait=1, reporter=EventLog(), renew_every=0.05
    ):
        first = cluster.live(KEY)
        assert first is not None
        before = first["spec"]["renewTime"]
        threading.Event().wait(0.3)
        now = cluster.live(KEY)
        assert now is not None and now["spec"]["renewTime"] > before


def test_a_lease_another_run_took_over_meanwhile_is_left_to_it() -> None:
    cluster = FakeCluster()
    with install_lock(cluster, install="demo", namespace="kubeflow", command="apply", wait=1, reporter=EventLog()):
        taken = cluster.live(KEY)
        assert taken is not None
        taken["metadata"]["resourceVersion"] = "999"  # another run judged us dead and took it
        taken["spec"]["holderIdentity"] = "other-host/7/feedbeef"
    left = cluster.live(KEY)
    assert left is not None and left["spec"]["holderIdentity"] == "other-host/7/feedbeef"


class LostReplies(FakeCluster):
    """Carries out the next writes of the Lease, then fails them as if the reply never arrived (a read
    timeout), and counts the renewals that went through."""

    def __init__(self, *errors: Exception, on: str = "replace") -> None:
        super().__init__()
        self.lose = list(errors)
        self.on = on
        self.renewed = 0
        self.renewals = threading.Event()

    def create(self, obj: Obj) -> Obj:
        stored = super().create(obj)
        if self.on == "create" and self.lose:
            raise self.lose.pop(0)
        return stored

    def replace(self, obj: Obj) -> Obj:
        stored = super().replace(obj)
        if self.on == "replace" and self.lose:
            raise self.lose.pop(0)
        self.renewed += 1
        if self.renewed >= 3:
            self.renewals.set()
        return stored


@pytest.mark.parametrize(
    "lost",
    [
        pytest.param([Unreachable("PUT: read timed out")], id="renewal-stored-reply-lost"),
        pytest.param([ApiError(504, "request timed out", reason="Timeout")], id="renewal-stored-reply-a-timeout"),
        pytest.param([Unreachable("read timed out")] * 2, id="renewal-and-its-retry-both-lost"),
    ],
)
def test_a_renewal_whose_reply_was_lost_is_recognised_as_ours(lost: list[Exception]) -> None:
    cluster, log = LostReplies(*lost), EventLog()
    with install_lock(
        cluster, install="demo", namespace="kubeflow", command="apply", wait=1, reporter=log, renew_every=0.01
    ) as held:
        assert cluster.renewals.wait(5), "renewals stopped after a conflict on our own newer resourceVersion"
        held.check("pruning")
    assert held.lost == ""
    assert cluster.live(KEY) is None  # freed: the run leaves nothing behind
    assert log.of("Failed") == []


def test_a_take_whose_reply_was_lost_is_recognised_as_ours() -> None:
    cluster, clock, log = LostReplies(Unreachable("POST: read timed out"), on="create"), Clock(), EventLog()
    hold(cluster, clock, log, wait=5)
    assert clock.now - 1000.0 < 2  # it did not wait for itself
    assert cluster.live(KEY) is None
    assert [e.message for e in log.of("Inventory")] == ["took Lease kubeflow/kfctl-lock-demo"]


def namespace(phase: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "status": {"phase": phase}}


def taken_over(live: Obj) -> None:
    live["metadata"]["resourceVersion"] = "999"
    live["metadata"]["annotations"]["kfctl.kubeflow.org/command"] = "delete"
    live["spec"].update(
        holderIdentity="other-host/7/feedbeef",
        acquireTime="2026-11-24T02:00:30.000000Z",
        renewTime="2026-11-24T02:00:31.000000Z",
    )


def cleared(live: Obj) -> None:
    live["metadata"]["resourceVersion"] = "999"
    live["spec"]["holderIdentity"] = None


@pytest.mark.parametrize(
    ("ns_phase", "meanwhile", "message"),
    [
        pytest.param(
            "Active",
            taken_over,
            "this run lost the install's lock to `kfctl delete` (host other-host, pid 7) since "
            "2026-11-24T02:00:30.000000Z (last renewed 2026-11-24T02:00:31.000000Z): this run had stopped "
            "renewing it for longer than 20s; it stopped before pruning; Lease kubeflow/kfctl-lock-demo",
            id="another-run-took-it-over",
        ),
        pytest.param(
            "Active",
            cleared,
            "this run lost the install's lock when another client cleared the Lease's holder; it stopped before "
            "pruning; Lease kubeflow/kfctl-lock-demo",
            id="its-holder-cleared",
        ),
        pytest.param(
            "Active",
            None,
            "this run lost the install's lock when another client deleted the Lease; it stopped before pruning; "
            "Lease kubeflow/kfctl-lock-demo",
            id="deleted-by-hand",
        ),
        pytest.param("Terminating", None, None, id="deleted-with-its-namespace-kfctl-delete"),
    ],
)
def test_a_run_that_lost_its_lease_stops_before_its_next_write(
    ns_phase: str, meanwhile: Callable[[Obj], None] | None, message: str | None
) -> None:
    cluster, log = FakeCluster(), EventLog()
    cluster.put(namespace(ns_phase))
    with install_lock(
        cluster, install="demo", namespace="kubeflow", command="apply", wait=1, reporter=log, renew_every=0.01
    ) as held:
        with cluster._lock:
            live = cluster.live(KEY)
            assert live is not None
            if meanwhile is None:
                del cluster.objects[KEY]
            else:
                meanwhile(live)
        for _ in range(500):  # the renewer notices at its next tick
            if held.lost or not [t for t in threading.enumerate() if t.name == "kfctl-lease"]:
                break
            threading.Event().wait(0.01)
        if message is None:
            held.check("pruning")
        else:
            with pytest.raises(LockedError) as info:
                held.check("pruning")
            assert info.value.exit_code == 12
            assert info.value.message == message
            assert info.value.hint == "run kfctl apply again: it waits for the other run to finish, then resumes"
    assert [e.message for e in log.of("Failed")] == (
        []
        if message is None
        else [message.split("; it stopped")[0] + "; it stops before its next prune or inventory write"]
    )
    if meanwhile is taken_over:
        left = cluster.live(KEY)
        assert left is not None and left["spec"]["holderIdentity"] == "other-host/7/feedbeef"  # left to it


@pytest.mark.parametrize(
    ("errors", "waited"),
    [
        pytest.param([ApiError(503, "etcdserver: leader changed", reason="ServiceUnavailable")], 0.5, id="a-503"),
        pytest.param([ApiError(429, "slow down", reason="TooManyRequests", retry_after=2)], 2.0, id="throttled"),
        pytest.param([Unreachable("connection refused")] * 2, 1.5, id="api-server-restarting"),
    ],
)
def test_taking_the_lease_rides_out_transient_failures(errors: list[Exception], waited: float) -> None:
    cluster, clock, log = FakeCluster(), Clock(), EventLog()
    cluster.fail(KEY, *errors)
    hold(cluster, clock, log, wait=30)
    assert clock.now - 1000.0 == pytest.approx(waited)
    assert len(log.of("Retrying")) == len(errors)
    assert cluster.live(KEY) is None


@pytest.mark.parametrize(
    ("errors", "raised"),
    [
        pytest.param([ApiError(503, "unavailable", reason="ServiceUnavailable")] * 20, "503", id="past-the-wait"),
        pytest.param([ApiError(403, "leases is forbidden", reason="Forbidden")], "403", id="rbac-at-once"),
    ],
)
def test_taking_the_lease_gives_up_with_the_last_error(errors: list[Exception], raised: str) -> None:
    cluster, clock, log = FakeCluster(), Clock(), EventLog()
    cluster.fail(KEY, *errors)
    with pytest.raises(ApiError) as info:
        hold(cluster, clock, log, wait=3)
    assert str(info.value).startswith(raised)
    assert clock.now - 1000.0 <= 3.0 + 0.01
