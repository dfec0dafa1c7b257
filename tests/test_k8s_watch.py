"""Watches: the latest objects in memory, 410 Gone → re-list, a broken stream → reads go back to the server.

Against the in-memory FakeCluster (its watches replay and stream stored changes as the API server's do) and,
for the HTTP side, against byte chunks as the API server writes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from fakecluster import FakeCluster, obj

from kfctl.k8s.api import ApiError, Unreachable, WatchEvent
from kfctl.k8s.cached import CachedCluster, equality_selector
from kfctl.k8s.stream import HttpWatchStream, events
from kfctl.k8s.watch import MISS, KindWatch, WatchCache
from kfctl.objects import ObjectKey


def eventually(condition: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def cm(name: str, ns: str = "demo", **data: str) -> dict[str, Any]:
    return obj("v1", "ConfigMap", name, ns, data=data)


def names(w: KindWatch) -> list[tuple[str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in w.objects(None)]


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    yield FakeCluster()


def started(cluster: FakeCluster, changed: list[ObjectKey] | None = None) -> KindWatch:
    w = KindWatch(cluster, "v1", "ConfigMap", on_change=(changed.append if changed is not None else lambda _k: None))
    w.retry_delay = 0.01
    w.start()
    assert eventually(lambda: w.state == "live")
    return w


def test_a_watch_lists_then_follows_adds_changes_and_deletes(cluster: FakeCluster) -> None:
    cluster.put(cm("before", a="1"))
    changed: list[ObjectKey] = []
    w = started(cluster, changed)
    try:
        cluster.put(cm("later", a="1"))
        cluster.put(cm("before", a="2"))
        cluster.delete("v1", "ConfigMap", namespace="demo", name="later")
        assert eventually(lambda: len(changed) == 4)
        assert [str(k) for k in changed] == [
            "ConfigMap demo/before",  # the LIST
            "ConfigMap demo/later",  # ADDED
            "ConfigMap demo/before",  # MODIFIED
            "ConfigMap demo/later",  # DELETED
        ]
        assert names(w) == [("demo", "before")]
        live, seen = w.lookup("demo", "before")
        assert live is not None and live["data"] == {"a": "2"}
        assert len(seen) == 2  # the listed version and the modified one
        assert (w.lists, w.state) == (1, "live")
    finally:
        w.close()
    assert w.state == "closed"


def test_410_gone_re_lists_and_picks_up_what_changed_meanwhile(cluster: FakeCluster) -> None:
    w = started(cluster)
    try:
        cluster.compact()  # the version the watch would resume from is gone
        cluster.break_watches(Unreachable("connection reset by peer"))
        cluster.put(cm("meanwhile"))
        assert eventually(lambda: w.lists == 2 and names(w) == [("demo", "meanwhile")])
        assert w.state == "live"
    finally:
        w.close()


@pytest.mark.parametrize(
    ("errors", "state", "error"),
    [
        pytest.param(
            [Unreachable("connection reset by peer")],
            "live",
            "",
            id="one break: re-watched from the last version",
        ),
        pytest.param(
            [Unreachable("connection reset by peer")] * 3,
            "broken",
            "Unreachable: connection reset by peer",
            id="still broken after 3 tries: given up",
        ),
        pytest.param(
            [ApiError(403, 'configmaps is forbidden: User "u" cannot watch resource "configmaps"')],
            "broken",
            'Forbidden: 403: configmaps is forbidden: User "u" cannot watch resource "configmaps"',
            id="forbidden: given up at once",
        ),
    ],
)
def test_a_broken_stream_is_retried_then_given_up(
    cluster: FakeCluster, errors: list[Exception], state: str, error: str
) -> None:
    w = started(cluster)
    try:
        cluster.fail_watches(*errors[1:])  # the re-watches after the break fail too
        cluster.break_watches(errors[0])
        assert eventually(lambda: w.state == state and not cluster.watch_failures)
        cluster.put(cm("after"))
        if state == "live":
            assert eventually(lambda: names(w) == [("demo", "after")])
        assert (w.state, w.error) == (state, error)
    finally:
        w.close()


def test_reads_fall_back_to_the_server_when_the_watch_broke(cluster: FakeCluster) -> None:
    cluster.put(cm("c"))
    cache = WatchCache(cluster, retry_delay=0.01)
    reads = CachedCluster(cluster, cache)
    cache.watch("v1", "ConfigMap")
    try:
        assert cache.live("", "ConfigMap") is not None
        gets = cluster.stats.by_method["GET"]
        assert reads.get("v1", "ConfigMap", namespace="demo", name="c") is not None
        assert cluster.stats.by_method["GET"] == gets  # from memory
        cluster.fail_watches(Unreachable("reset"), Unreachable("reset"))
        cluster.break_watches(Unreachable("reset"))
        assert eventually(lambda: cache.watches()[("", "ConfigMap")].state == "broken")
        assert reads.get("v1", "ConfigMap", namespace="demo", name="c") is not None
        # The break is the first of 3 failures, 2 re-watches fail (2 requests), then the read goes to the server.
        assert cluster.stats.by_method["GET"] == gets + 2 + 1
    finally:
        cache.close()


# --- read-your-writes ------------------------------------------------------------------------------------
def _version(o: dict[str, Any], rv: str, generation: int = 1, uid: str = "u1") -> dict[str, Any]:
    o["metadata"].update(resourceVersion=rv, generation=generation, uid=uid)
    return o


@pytest.mark.parametrize(
    ("watched", "wrote", "answer"),
    [
        pytest.param(["10"], None, "10", id="nothing written by us: the watch's object"),
        pytest.param(["10", "11"], ("11", 1, "u1"), "11", id="our write seen by the watch"),
        pytest.param(["10", "11", "12"], ("11", 1, "u1"), "12", id="our write seen, and a newer status since"),
        pytest.param(["10"], ("11", 2, "u1"), MISS, id="our write not seen yet: ask the server"),
        pytest.param(["12"], ("11", 2, "u1"), MISS, id="listed after our write, older generation: ask"),
        pytest.param(["12:2"], ("11", 2, "u1"), "12", id="listed after our write, same generation: newer"),
        pytest.param(["12:2:u2"], ("11", 2, "u1"), MISS, id="another incarnation (UID): ask"),
    ],
)
def test_a_read_from_memory_is_never_older_than_our_own_write(
    watched: list[str], wrote: tuple[str, int, str] | None, answer: object
) -> None:
    class Watch(KindWatch):
        def lookup(self, namespace: str, name: str) -> Any:
            parts = watched[-1].split(":")
            rv, generation, uid = (parts + ["1", "u1"][len(parts) - 1 :])[:3]
            last = _version(cm("c"), rv, int(generation), uid)
            return last, frozenset(v.split(":")[0] for v in watched)

    cluster = FakeCluster()
    cache = WatchCache(cluster)
    w = Watch(cluster, "v1", "ConfigMap")
    w.state = "live"
    w.settled.set()
    cache._watches[("", "ConfigMap")] = w
    if wrote is not None:
        cache.wrote(_version(cm("c"), wrote[0], wrote[1], wrote[2]))
    found = cache.read(ObjectKey("", "ConfigMap", "demo", "c"))
    got = found if found is MISS else found["metadata"]["resourceVersion"]  # type: ignore[index]
    assert got == answer
    assert cache.behind(ObjectKey("", "ConfigMap", "demo", "c")) == (answer is MISS)  # the engine waits for it


@pytest.mark.parametrize(
    ("selector", "parsed"),
    [
        (None, {}),
        ("kubernetes.io/service-name=web", {"kubernetes.io/service-name": "web"}),
        ("a=1,b=2", {"a": "1", "b": "2"}),
        ("a==1", None),
        ("a!=1", None),
        ("a in (1,2)", None),
        ("a", None),
    ],
)
def test_only_equality_selectors_are_answered_from_memory(selector: str | None, parsed: dict[str, str] | None) -> None:
    assert equality_selector(selector) == parsed


# --- the HTTP stream --------------------------------------------------------------------------------------
ADDED = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}\n'
BOOKMARK = b'{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}\n'
GONE = b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410,"reason":"Expired"}}\n'


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param(
            [ADDED[:20], ADDED[20:] + BOOKMARK[:5], BOOKMARK[5:]],
            [
                WatchEvent(
                    "ADDED",
                    {"metadata": {"name": "a", "resourceVersion": "5"}, "apiVersion": "v1", "kind": "ConfigMap"},
                ),
                WatchEvent("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}),
            ],
            id="lines split across chunks; items get apiVersion and kind",
        ),
        pytest.param(
            [GONE],
            [WatchEvent("ERROR", {"kind": "Status", "apiVersion": "v1", "code": 410, "reason": "Expired"})],
            id="an ERROR keeps its Status",
        ),
    ],
)
def test_a_watch_body_is_read_as_one_event_per_line(chunks: list[bytes], expected: list[WatchEvent]) -> None:
    assert list(events(chunks, api_version="v1", kind="ConfigMap")) == expected


class FakeResponse:
    chunked = True

    def __init__(self, chunks: list[bytes | Exception]) -> None:
        self.chunks = chunks
        self.released = False

    def read_chunked(self) -> Iterator[bytes]:
        for c in self.chunks:
            if isinstance(c, Exception):
                raise c
            yield c

    def release_conn(self) -> None:
        self.released = True

    def shutdown(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_connection_that_breaks_mid_stream_is_unreachable_unless_we_closed_it() -> None:
    broken = FakeResponse([ADDED, urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")])
    stream = HttpWatchStream(broken, api_version="v1", kind="ConfigMap")
    got: list[str] = []
    with pytest.raises(Unreachable, match="watch of ConfigMap broke: Connection broken: IncompleteRead"):
        for event in stream:
            got.append(event.type)
    assert got == ["ADDED"] and broken.released

    closing = FakeResponse([ADDED, urllib3.exceptions.ProtocolError("Connection broken: shut down")])
    stream = HttpWatchStream(closing, api_version="v1", kind="ConfigMap")
    seen = []
    for event in stream:
        seen.append(event.type)
        stream.close()  # as the run's end does from another thread
    assert seen == ["ADDED"]
