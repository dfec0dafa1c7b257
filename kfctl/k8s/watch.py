"""Watches that keep the latest state of a kind in memory, so that waiting on health costs no request per poll.

A first apply of the full catalog used to spend most of its requests polling: a GET per waiting CRD or
Deployment every quarter second to a second, and each webhook backend re-reading its configurations,
Deployment, Service and EndpointSlices on every look. A :class:`KindWatch` instead LISTs a kind once and then
WATCHes it from the list's resourceVersion, as client-go's reflector does: it follows bookmarks, re-lists
when the server answers 410 Gone (the version was compacted away), re-opens the stream when the server ends
it (``timeoutSeconds``) and tells its owner which object changed.

:class:`WatchCache` holds the watches of one run and is the only place that decides whether a read may be
answered from memory: only from a watch that is live, and never with an object older than one this process
wrote (read-your-writes, judged by resourceVersions the watch has seen, else by UID and generation). When it
cannot answer it says :data:`MISS`, and the caller asks the API server as before — a watch that fails to
start, breaks for good, or is forbidden costs polls, never the apply.

Nothing here decides what an object's state means (that is kfctl.health) or when to look (the engine).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Literal

from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, WatchStream
from kfctl.objects import Obj, ObjectKey, group_of

WATCH_SECONDS = 290  # each watch request's timeoutSeconds; the watch re-opens from its last resourceVersion
RETRIES = 3  # consecutive failures before a watch is given up for the run
SYNC_WAIT = 1.0  # seconds a read waits for a watch's first LIST rather than asking the server itself
GIVE_UP_AT_ONCE = frozenset({401, 403, 404, 405})  # not allowed or not served: retrying cannot help

State = Literal["syncing", "live", "broken", "closed"]


class _Miss:
    def __repr__(self) -> str:
        return "MISS"


MISS: Final = _Miss()
"""The cache cannot answer this read: ask the API server."""


def _meta(obj: Obj) -> dict[str, object]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class KindWatch:
    """LIST then WATCH one kind, in one namespace or everywhere; the latest object by (namespace, name).

    ``state`` is "syncing" until the first LIST is in and again while a broken stream is re-opened, "live"
    while the memory is as fresh as the stream, "broken" once it gave up (``error`` says why), "closed"
    after :meth:`close`. ``on_change`` is called from the watch's thread with the key of each object that
    was added, modified or deleted (every object after a re-list)."""

    def __init__(
        self,
        cluster: Cluster,
        api_version: str,
        kind: str,
        *,
        group: str | None = None,
        namespace: str | None = None,
        on_change: Callable[[ObjectKey], None] = lambda _key: None,
        timeout_seconds: int = WATCH_SECONDS,
        retry_delay: float = 0.5,
    ) -> None:
        self.cluster = cluster
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.on_change = on_change
        self.timeout_seconds = timeout_seconds
        self.retry_delay = retry_delay
        self.state: State = "syncing"
        self.settled = threading.Event()  # the first LIST is in, or the watch gave up: readers need not wait
        self.error = ""
        self.lists = 0  # LISTs made: 1, plus one per 410 Gone
        self._group = group_of(api_version) if api_version else (group or "")
        self._objects: dict[tuple[str, str], Obj] = {}
        self._seen: dict[tuple[str, str], set[str]] = {}  # resourceVersions each object had, in this watch
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    # --- reading -------------------------------------------------------------------------------------
    def lookup(self, namespace: str, name: str) -> tuple[Obj | None, frozenset[str]]:
        """The object as last seen (None: it does not exist) and every resourceVersion it had in this watch."""
        with self._lock:
            return self._objects.get((namespace, name)), frozenset(self._seen.get((namespace, name), ()))

    def objects(self, namespace: str | None) -> list[Obj]:
        with self._lock:
            return [o for (ns, _), o in sorted(self._objects.items()) if namespace is None or ns == namespace]

    # --- running -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Run :meth:`run` on a daemon thread: a watch must never keep the process alive."""
        self._thread = threading.Thread(target=self.run, name=f"kfctl-watch-{self.kind}", daemon=True)
        self._thread.start()

    def close(self, *, wait: float = 1.0) -> None:
        self._closed.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        self.join(wait)
        self._set("closed")

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        """List, then watch until closed; re-list after 410 Gone, re-watch after the server ends a stream, retry
        a failure a few times, then give up ("broken"): readers fall back to the API server."""
        version = ""
        failures = 0
        while not self._closed.is_set():
            try:
                if not self.api_version:  # started by group and kind: the preferred version
                    key = ObjectKey(self._group, self.kind, "", "")
                    self.api_version = self.cluster.resource_for_key(key).api_version
                if not version:
                    version = self._list()
                stream = self.cluster.watch(
                    self.api_version,
                    self.kind,
                    namespace=self.namespace,
                    resource_version=version,
                    timeout_seconds=self.timeout_seconds,
                )
                with self._lock:
                    self._stream = stream
                if self._closed.is_set():
                    stream.close()
                    break
                self._set("live")
                for event in stream:
                    failures = 0
                    if event.type == "ERROR":
                        code = event.object.get("code")
                        raise ApiError(int(code) if isinstance(code, int) else 500, str(event.object.get("message")))
                    version = str(_meta(event.object).get("resourceVersion") or version)
                    if event.type != "BOOKMARK":
                        self._record(event.type, event.object)
            except ApiError as e:
                if e.status == 410:  # too old to watch from: list again
                    version = ""
                    self.state = "syncing"
                    continue
                failures += 1
                if self._failed(e, failures, at_once=e.status in GIVE_UP_AT_ONCE):
                    return
            except NoKindMatch as e:
                self._failed(e, failures, at_once=True)
                return
            except Exception as e:  # a broken connection, or anything else: the apply must go on without us
                failures += 1
                if self._failed(e, failures, at_once=False):
                    return
        self._set("closed")

    def _set(self, state: State) -> None:
        self.state = state
        if state != "syncing":
            self.settled.set()

    def _failed(self, e: BaseException, failures: int, *, at_once: bool) -> bool:
        """True when the watch gives up; else wait before the next attempt (reads go to the server meanwhile)."""
        if self._closed.is_set():
            self._set("closed")
            return True
        if at_once or failures >= RETRIES:
            self.error = f"{type(e).__name__}: {e}"
            self._set("broken")
            return True
        self.state = "syncing"
        self._closed.wait(self.retry_delay * failures)
        return False

    def _list(self) -> str:
        listed = self.cluster.list_with_version(self.api_version, self.kind, namespace=self.namespace)
        self.lists += 1
        fresh = {(str(_meta(o).get("namespace") or ""), str(_meta(o).get("name"))): o for o in listed.items}
        with self._lock:
            changed = set(self._objects) | set(fresh)
            self._objects = fresh
            for key, o in fresh.items():
                self._seen.setdefault(key, set()).add(str(_meta(o).get("resourceVersion") or ""))
        self._notify(changed)
        return listed.resource_version

    def _record(self, kind: str, obj: Obj) -> None:
        meta = _meta(obj)
        key = (str(meta.get("namespace") or ""), str(meta.get("name")))
        with self._lock:
            if kind == "DELETED":
                self._objects.pop(key, None)
            else:
                self._objects[key] = obj
            self._seen.setdefault(key, set()).add(str(meta.get("resourceVersion") or ""))
        self._notify([key])

    def _notify(self, keys: Iterable[tuple[str, str]]) -> None:
        for namespace, name in keys:
            self.on_change(ObjectKey(self._group, self.kind, namespace, name))


@dataclass(frozen=True)
class _Written:
    uid: str
    resource_version: str
    generation: int | None


class WatchCache:
    """The run's watches, one per kind across all namespaces, and what this process wrote.

    A kind is watched everywhere rather than per namespace: a platform spreads over a dozen namespaces, and
    one LIST + WATCH per kind costs less than one per namespace. A user who may not list a kind cluster-wide
    gets a broken watch, hence polls — the same requests as before watches existed."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        on_change: Callable[[ObjectKey], None] = lambda _key: None,
        timeout_seconds: int = WATCH_SECONDS,
        retry_delay: float = 0.5,
    ) -> None:
        self.cluster = cluster
        self.on_change = on_change
        self.timeout_seconds = timeout_seconds
        self.retry_delay = retry_delay
        self._watches: dict[tuple[str, str], KindWatch] = {}
        self._written: dict[ObjectKey, _Written] = {}
        self._lock = threading.Lock()
        self._closed = False

    def watch(self, api_version: str, kind: str, *, group: str | None = None) -> None:
        """Start watching the kind (once per run; a kind whose watch broke is not tried again). With
        ``api_version`` "" and ``group``, the watch maps the group's preferred version itself."""
        group = group_of(api_version) if api_version else (group or "")
        with self._lock:
            if self._closed or (group, kind) in self._watches:
                return
            w = KindWatch(
                self.cluster,
                api_version,
                kind,
                group=group,
                on_change=self.on_change,
                timeout_seconds=self.timeout_seconds,
                retry_delay=self.retry_delay,
            )
            self._watches[(group, kind)] = w
        w.start()

    def watches(self) -> dict[tuple[str, str], KindWatch]:
        with self._lock:
            return dict(self._watches)

    def watching(self, group: str, kind: str) -> bool:
        """Whether reads of the kind are (or are about to be) answered from memory; never blocks."""
        with self._lock:
            w = self._watches.get((group, kind))
        return w is not None and w.state in ("syncing", "live")

    def live(self, group: str, kind: str) -> KindWatch | None:
        """The kind's watch if it is live. A watch still making its first LIST is waited for (SYNC_WAIT): its
        answer is on the way, and asking the server too would cost the request the watch is there to save."""
        with self._lock:
            w = self._watches.get((group, kind))
        if w is not None and not w.settled.is_set():
            w.settled.wait(SYNC_WAIT)
        return w if w is not None and w.state == "live" else None

    def wrote(self, obj: Obj) -> None:
        """Remember the object the server returned from a write: no read from memory may be older."""
        meta = _meta(obj)
        group = group_of(str(obj.get("apiVersion", "")))
        key = ObjectKey(group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))
        generation = meta.get("generation")
        with self._lock:
            self._written[key] = _Written(
                str(meta.get("uid") or ""),
                str(meta.get("resourceVersion") or ""),
                generation if isinstance(generation, int) else None,
            )

    def read(self, key: ObjectKey) -> Obj | _Miss | None:
        """The object (None: it does not exist) when a live watch knows it at least as new as this process's
        last write of it; MISS otherwise."""
        w = self.live(key.group, key.kind)
        if w is None:
            return MISS
        obj, seen = w.lookup(key.namespace, key.name)
        with self._lock:
            written = self._written.get(key)
        if written is None or written.resource_version in seen:
            return obj
        if obj is not None and written.generation is not None:
            meta = _meta(obj)
            generation = meta.get("generation")
            same = str(meta.get("uid") or "") == written.uid
            if same and isinstance(generation, int) and generation >= written.generation:
                return obj  # listed after our write, and changed since (a status update): newer still
        return MISS

    def behind(self, key: ObjectKey) -> bool:
        """A live watch of the kind has not shown this process's last write of ``key`` yet: it will, so a
        caller that can wait for the change need not ask the server."""
        return self.live(key.group, key.kind) is not None and self.read(key) is MISS

    def read_all(self, group: str, kind: str, namespace: str | None, labels: dict[str, str]) -> list[Obj] | _Miss:
        """Every object of the kind (in ``namespace``, or everywhere) carrying ``labels``; MISS as for read."""
        w = self.live(group, kind)
        if w is None:
            return MISS
        out = []
        for o in w.objects(namespace):
            have = _meta(o).get("labels")
            have = have if isinstance(have, dict) else {}
            if all(have.get(k) == v for k, v in labels.items()):
                out.append(o)
        return out

    def close(self) -> None:
        """Stop every watch (the run ended, Ctrl-C included); reads then go to the API server."""
        with self._lock:
            self._closed = True
            watches = list(self._watches.values())
        for w in watches:
            w.close(wait=0)
        for w in watches:
            w.join(1.0)
