"""kfctl_testbed.informer: a LIST then watches from its resourceVersion keep a collection in memory, and a Cache
answers from memory only what it has listed. Against a scripted API (no server): the real one is every e2e
cluster's stand-in and runtime."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kfctl_testbed import informer
from kfctl_testbed.kube_rest import JSON, ApiError


def obj(name: str, version: str, namespace: str | None = None) -> JSON:
    return {"metadata": {"name": name, "resourceVersion": version} | ({"namespace": namespace} if namespace else {})}


class StopWatching(Exception):
    pass


class ScriptedApi:
    """A LIST answer per collection (404 for any other), then one list of events per watch; a watch beyond the
    script raises StopWatching. Plain reads answer {"from": "server"} and are recorded."""

    def __init__(self, listed: dict[str, list[JSON]], *watches: list[JSON], version: str = "5") -> None:
        self.listed, self.version = listed, version
        self.watches = list(watches)
        self.watched_from: list[str | None] = []
        self.reads: list[str] = []

    def request(self, method: str, path: str) -> JSON:
        if path not in self.listed:
            raise ApiError(method, path, 404, "")
        return {"metadata": {"resourceVersion": self.version}, "items": self.listed[path]}

    def watch(self, path: str, *, resource_version: str | None = None) -> Iterator[JSON]:
        self.watched_from.append(resource_version)
        if not self.watches:
            raise StopWatching
        yield from self.watches.pop(0)

    def get(self, path: str, **kwargs: Any) -> JSON | None:
        self.reads.append(f"GET {path}")
        return {"from": "server"}

    def list(self, path: str, **kwargs: Any) -> list[JSON]:
        self.reads.append(f"LIST {path}")
        return [{"from": "server"}]


def contents(i: informer.Informer) -> dict[str, str]:
    return {informer.key(o): o["metadata"]["resourceVersion"] for o in i.items()}


def test_events_after_the_list_add_change_and_remove_objects_and_each_watch_goes_on_from_the_last_version() -> None:
    api = ScriptedApi(
        {"/api/v1/secrets": [obj("a", "1", "ns"), obj("b", "2", "ns")]},
        [
            {"type": "ADDED", "object": obj("c", "6", "ns")},
            {"type": "MODIFIED", "object": obj("a", "7", "ns")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
        ],
        [{"type": "DELETED", "object": obj("b", "10", "ns")}],
    )
    changed = threading.Event()
    i = informer.Informer(api, "/api/v1/secrets", changed)
    with pytest.raises(StopWatching):
        i.list_and_watch()
    assert contents(i) == {"ns/a": "7", "ns/c": "6"}
    assert api.watched_from == ["5", "9", "10"]  # the list's version, then the bookmark's, then the last event's
    assert i.synced.is_set() and changed.is_set()


def test_a_version_too_old_ends_the_watch_so_that_the_collection_is_listed_again() -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 5 (8)"}
    api = ScriptedApi({"/api/v1/nodes": [obj("a", "1")]}, [{"type": "ERROR", "object": gone}])
    i = informer.Informer(api, "/api/v1/nodes", threading.Event())
    with pytest.raises(ApiError) as e:
        i.list_and_watch()
    assert e.value.status == 410
    assert contents(i) == {"a": "1"}, "what it has stays until the next list replaces it"


@pytest.fixture
def cache() -> informer.Cache:
    """Secrets, Deployments and nodes listed; pods informed but not served (its LIST is 404); ConfigMaps informed
    but not listed yet."""
    api = ScriptedApi(
        {
            "/api/v1/secrets": [obj("a", "1", "ns")],
            "/apis/apps/v1/deployments": [obj("d", "1", "ns")],
            "/api/v1/nodes": [obj("n", "1")],
        }
    )
    c = informer.Cache(api, (*api.listed, "/api/v1/pods", "/api/v1/configmaps"))  # not started: listed here, once
    for path, i in c.informers.items():
        if path != "/api/v1/configmaps":
            with pytest.raises((StopWatching, ApiError)):
                i.list_and_watch()
    return c


@pytest.mark.parametrize(
    ("call", "path", "answer", "asked"),
    [
        # informed and listed: from memory
        ("get", "/api/v1/namespaces/ns/secrets/a", "a", []),
        ("get", "/api/v1/namespaces/ns/secrets/missing", None, []),
        ("get", "/apis/apps/v1/namespaces/ns/deployments/d", "d", []),
        ("get", "/api/v1/nodes/n", "n", []),
        ("list", "/api/v1/nodes", ["n"], []),
        # anything else: the server
        ("get", "/api/v1/namespaces/ns/configmaps/a", "server", ["GET /api/v1/namespaces/ns/configmaps/a"]),
        ("get", "/api/v1/namespaces/ns/secrets/a/status", "server", ["GET /api/v1/namespaces/ns/secrets/a/status"]),
        ("get", "/apis/cert-manager.io/v1", "server", ["GET /apis/cert-manager.io/v1"]),
        ("list", "/api/v1/namespaces/ns/secrets", ["server"], ["LIST /api/v1/namespaces/ns/secrets"]),
        ("list", "/api/v1/pods", [], []),  # informed, not served: as empty as the server says
        ("get", "/api/v1/namespaces/ns/pods/p", None, []),
        ("list", "/api/v1/configmaps", ["server"], ["LIST /api/v1/configmaps"]),  # informed, not listed yet
    ],
)
def test_a_cache_answers_from_memory_only_what_it_has_listed(
    cache: informer.Cache, call: str, path: str, answer: Any, asked: list[str]
) -> None:
    def label(o: JSON | None) -> str | None:
        return None if o is None else o.get("from") or o["metadata"]["name"]

    got = label(cache.get(path)) if call == "get" else [label(o) for o in cache.list(path)]
    assert got == answer
    assert cache.api.reads == asked  # type: ignore[attr-defined]


def test_a_query_always_goes_to_the_server(cache: informer.Cache) -> None:
    cache.list("/api/v1/nodes", query={"labelSelector": "kwok"})
    assert cache.api.reads == ["LIST /api/v1/nodes"]  # type: ignore[attr-defined]
