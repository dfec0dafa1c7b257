"""Collections kept in memory by a LIST and then a WATCH from its resourceVersion, as client-go's informers keep them
for the controllers the test bed plays (the stand-in, the process runtime), so that their once-a-second passes read
memory instead of asking the API server again.

Why: a pass that LISTed and GOT everything it looks at cost the API server more than all an idle cluster's other
clients together. A cluster with the catalog installed, idle, spent 27 CPU-s a minute with the stand-in and the
runtime polling, 3 CPU-s with both stopped: the API server serialising the same lists, webhook configurations,
CRDs, Secrets and ConfigMaps of every pod's volumes, every second, on a machine of two cores.

`Cache` answers `get` and `list` like `kube_rest.Client` does, from memory for the collections it informs and from
the API server for everything else (or while a collection has not been listed yet). Writes always go to the API
server: what a pass reads may lag its own last write by one watch event, which every caller already survives (its
writes are guarded by a `test` patch, an AlreadyExists, or the next pass).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol

from kfctl_testbed.kube_rest import JSON, ApiError

log = logging.getLogger("informer")

RETRY_SECONDS = 1.0  # after a failed LIST (a collection not served yet) or a broken watch
# <prefix>[/namespaces/<namespace>]/<plural>/<name>: the object paths a Cache can answer.
_OBJECT_PATH = re.compile(
    r"(?P<prefix>/api/v1|/apis/[^/]+/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)/(?P<name>[^/]+)"
)


class Api(Protocol):
    def request(self, method: str, path: str) -> JSON: ...

    def watch(self, path: str, *, resource_version: str | None = None) -> Iterable[JSON]: ...

    def get(self, path: str, **kwargs: Any) -> JSON | None: ...

    def list(self, path: str, **kwargs: Any) -> list[JSON]: ...


class Reader(Protocol):
    """What a pass reads through: a `kube_rest.Client` (every read asks the API server) or a `Cache`."""

    def get(self, path: str, **kwargs: Any) -> JSON | None: ...

    def list(self, path: str, **kwargs: Any) -> list[JSON]: ...


def key(obj: JSON) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


class Informer:
    """One collection (all namespaces), in memory. Its objects are shared: callers read them and never change
    them. ``changed`` is set after each event."""

    def __init__(self, api: Api, path: str, changed: threading.Event) -> None:
        self.api, self.path, self.changed = api, path, changed
        self.synced = threading.Event()  # set once the first LIST is in
        self._objects: dict[str, JSON] = {}
        self._lock = threading.Lock()

    def start(self) -> Informer:
        threading.Thread(target=self._run, name=f"informer {self.path}", daemon=True).start()
        return self

    def items(self) -> list[JSON]:
        with self._lock:
            return list(self._objects.values())

    def get(self, name: str) -> JSON | None:
        """By "<namespace>/<name>" (or "<name>" for a cluster-scoped object)."""
        with self._lock:
            return self._objects.get(name)

    def _run(self) -> None:
        while True:
            try:
                self.list_and_watch()
            except Exception as e:  # not served (yet), the API server restarting, a version too old
                log.debug("informer %s: %s", self.path, e)
            time.sleep(RETRY_SECONDS)

    def list_and_watch(self) -> None:
        """One LIST, then watches from its resourceVersion until the server says it is too old (410: the caller
        lists again). Raises when the watch cannot go on. A collection not served (404: its CRD is not installed,
        or no more) holds nothing, as the server would answer."""
        try:
            listed = self.api.request("GET", self.path)
        except ApiError as e:
            if e.status == 404:
                with self._lock:
                    self._objects = {}
                self.synced.set()
            raise
        with self._lock:
            self._objects = {key(o): o for o in listed.get("items") or []}
        self.synced.set()
        self.changed.set()
        version = str(listed["metadata"]["resourceVersion"])
        while True:
            for event in self.api.watch(self.path, resource_version=version):
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    raise ApiError("WATCH", self.path, int(obj.get("code") or 500), obj.get("message") or "")
                version = str(obj["metadata"]["resourceVersion"])
                if kind == "BOOKMARK":
                    continue
                with self._lock:
                    if kind == "DELETED":
                        self._objects.pop(key(obj), None)
                    else:
                        self._objects[key(obj)] = obj
                self.changed.set()
            # The server ended the watch at its timeout: go on from where it stopped.


class Cache:
    """`get` and `list` of the collections in ``paths`` (e.g. "/api/v1/secrets") from memory once listed; any
    other read, or one with a query, from the API server."""

    def __init__(self, api: Api, paths: Iterable[str]) -> None:
        self.api = api
        self.changed = threading.Event()
        self.informers = {path: Informer(api, path, self.changed) for path in paths}

    def start(self) -> Cache:
        for i in self.informers.values():
            i.start()
        return self

    def _informer(self, path: str) -> Informer | None:
        informer = self.informers.get(path)
        return informer if informer is not None and informer.synced.is_set() else None

    def get(self, path: str, **kwargs: Any) -> JSON | None:
        m = None if kwargs else _OBJECT_PATH.fullmatch(path)
        informer = m and self._informer(f"{m['prefix']}/{m['plural']}")
        if not m or informer is None:
            return self.api.get(path, **kwargs)
        return informer.get(f"{m['ns']}/{m['name']}" if m["ns"] else m["name"])

    def list(self, path: str, **kwargs: Any) -> list[JSON]:
        informer = None if kwargs else self._informer(path)
        return informer.items() if informer is not None else self.api.list(path, **kwargs)
