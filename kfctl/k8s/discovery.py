"""Discovery: which kinds the API server serves, at which versions, and where (the REST mapping).

Kubernetes serves aggregated discovery (KEP-3352; beta in 1.27, GA in 1.30): asked for
``APIGroupDiscoveryList``, ``GET /api`` and ``GET /apis`` each answer with every group, version, resource,
kind and scope in one document. So a run needs two discovery requests where it needed one per group-version
(71 on a first apply of the full catalog). A server that does not know the type answers the same requests
with its plain lists (``APIVersions``, ``APIGroupList``); then each group-version's ``APIResourceList`` is
fetched when first needed, as clients did before aggregation.

``invalidate(group)`` (its CRD just became Established) makes the next lookup in that group ask again first.
A kind that is not found makes the lookup ask again too, unless the document is younger than ``MIN_AGE``:
before its CRDs are applied, a first apply looks up a dozen kinds that are not served yet, each twice, and
one answer a moment old says as much as a new one would. Requests for a document are coalesced: at most one
is in flight, and a lookup that missed in a document that has since been replaced uses the newer one instead
of asking again, so 60 CRDs becoming Established in a burst cost a few refreshes of ``/apis``, not 60. The
aggregated document may lag a CRD that was Established a moment ago: the lookup then raises NoKindMatch,
which the engine retries as transient, and the retry asks again.

Thread-safe (the engine's workers map kinds concurrently). Requests go through the ``fetch`` function it is
given; it does not decide what an API error means.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kfctl.k8s.api import ApiError, NoKindMatch, NotFound, Resource
from kfctl.objects import meta_of

# The aggregated document at its GA version, else at its beta one (servers before 1.30), else the plain lists.
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
AGGREGATED_KIND = "APIGroupDiscoveryList"
CORE_ROOT, GROUPS_ROOT = "/api", "/apis"
MIN_AGE = 0.5  # seconds: a miss in a younger document is final (see the module docstring)

Fetch = Callable[[str, str], Any]  # (path, Accept header) -> the JSON document; raises the client's errors


@dataclass(frozen=True)
class _Doc:
    """One answer of a discovery root: the groups it lists and, when aggregated, every kind in them."""

    versions: Mapping[str, tuple[str, ...]]  # group -> served versions, preferred first
    kinds: Mapping[str, Mapping[str, Resource]] | None  # "group/version" -> kind -> mapping; None: not aggregated
    listable: tuple[Resource, ...]  # aggregated only: namespaced kinds that can be listed, preferred versions
    epoch: int  # invalidations counted when its request was sent
    asked: float  # when its request was sent (the clock's seconds)


class _Root:
    def __init__(self, path: str) -> None:
        self.path = path
        self.doc: _Doc | None = None
        self.fetching = threading.Lock()  # one request of this root in flight


class Discovery:
    """The REST mappings of one API server, cached; see the module docstring for when it asks again."""

    def __init__(self, fetch: Fetch, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()  # guards the fields below; never held during a request
        self._roots = {CORE_ROOT: _Root(CORE_ROOT), GROUPS_ROOT: _Root(GROUPS_ROOT)}
        self._epoch = 0
        self._invalidated: dict[str, int] = {}  # group -> epoch of its last invalidate
        self._legacy: dict[str, dict[str, Resource]] = {}  # "group/version" -> kinds, from servers without aggregation

    # --- lookups --------------------------------------------------------------------------------------------
    def resource(self, group: str, version: str, kind: str) -> Resource:
        """The mapping of ``kind`` at ``group/version``; NoKindMatch after one refresh."""
        doc, fresh = self._current(group)
        found = self._kinds(doc, group, version).get(kind)
        if found is None and not fresh and self._clock() - doc.asked >= MIN_AGE:
            doc = self._refresh(self._roots[_root_of(group)], seen=doc)
            found = self._kinds(doc, group, version, fresh=True).get(kind)
        if found is None:
            raise NoKindMatch(group, version, kind)
        return found

    def preferred(self, group: str, kind: str) -> Resource:
        """The mapping of ``kind`` at the most preferred version of ``group`` that serves it."""
        doc, fresh = self._current(group)
        found = self._first(doc, group, kind, fresh=False)
        if found is None and not fresh and self._clock() - doc.asked >= MIN_AGE:
            doc = self._refresh(self._roots[_root_of(group)], seen=doc)
            found = self._first(doc, group, kind, fresh=True)
        if found is None:
            versions = doc.versions.get(group, ())
            raise NoKindMatch(group, versions[0] if versions else "", kind)
        return found

    def invalidate(self, group: str) -> None:
        """The group's kinds changed (a CRD became Established): its next lookup asks the server first."""
        with self._lock:
            self._epoch += 1
            self._invalidated[group] = self._epoch
            for gv in [gv for gv in self._legacy if _group_of(gv) == group]:
                del self._legacy[gv]

    def namespaced_resources(self) -> tuple[Resource, ...]:
        """Every namespaced kind that can be listed, at its group's preferred version, from a fresh answer.
        A group whose discovery fails (an aggregated API whose backend is down) is left out."""
        out: list[Resource] = []
        for path in (CORE_ROOT, GROUPS_ROOT):
            doc = self._refresh(self._roots[path], seen=None, always=True)
            if doc.kinds is not None:
                out += doc.listable
                continue
            for group, versions in doc.versions.items():
                try:
                    resources = self._fetch(_gv_path(group, versions[0]), "application/json").get("resources", [])
                except ApiError:
                    continue
                out += (
                    Resource(group, versions[0], r["kind"], r["name"], True)
                    for r in resources
                    if "/" not in r["name"] and r.get("namespaced") and "list" in (r.get("verbs") or [])
                )
        return tuple(out)

    # --- documents ------------------------------------------------------------------------------------------
    def _current(self, group: str) -> tuple[_Doc, bool]:
        """The root document for ``group`` and whether it arrived during this call: a document is asked for
        when there is none yet, or when the group was invalidated after its request was sent."""
        root = self._roots[_root_of(group)]
        with self._lock:
            doc, mark = root.doc, self._invalidated.get(group, 0)
        fresh = False
        while doc is None or doc.epoch < mark:
            doc, fresh = self._refresh(root, seen=doc), True
        return doc, fresh

    def _refresh(self, root: _Root, *, seen: _Doc | None, always: bool = False) -> _Doc:
        """A document newer than ``seen``: one another thread fetched meanwhile, else a new request.
        ``always``: a new request even if another thread's answer arrived meanwhile."""
        with root.fetching:
            with self._lock:
                current, epoch = root.doc, self._epoch
            if current is not None and current is not seen and not always:
                return current
            asked = self._clock()
            answer = self._fetch(root.path, AGGREGATED)
            doc = _parse(root.path, answer, epoch=epoch, asked=asked)
            with self._lock:
                root.doc = doc
            return doc

    def _first(self, doc: _Doc, group: str, kind: str, *, fresh: bool) -> Resource | None:
        for version in doc.versions.get(group, ()):
            found = self._kinds(doc, group, version, fresh=fresh).get(kind)
            if found is not None:
                return found
        return None

    def _kinds(self, doc: _Doc, group: str, version: str, *, fresh: bool = False) -> Mapping[str, Resource]:
        """The kinds served at group/version: from the aggregated document, else from the group-version's
        own document (cached until its group is invalidated; asked again when ``fresh``)."""
        gv = f"{group}/{version}" if group else version
        if doc.kinds is not None:
            return doc.kinds.get(gv, {})
        with self._lock:
            cached = self._legacy.get(gv)
        if cached is not None and not fresh:
            return cached
        try:
            resources = self._fetch(_gv_path(group, version), "application/json").get("resources", [])
        except NotFound:
            resources = []
        kinds = {
            r["kind"]: Resource(group, version, r["kind"], r["name"], bool(r.get("namespaced")))
            for r in resources
            if "/" not in r["name"]  # subresources (pods/status) are not kinds
        }
        with self._lock:
            self._legacy[gv] = kinds
        return kinds


def _parse(path: str, doc: Any, *, epoch: int, asked: float) -> _Doc:
    """A root's answer: aggregated (every kind), or the plain list of groups (/apis) or core versions (/api)."""
    if doc.get("kind") != AGGREGATED_KIND:
        if path == CORE_ROOT:
            return _Doc({"": tuple(doc.get("versions") or ["v1"])}, None, (), epoch, asked)
        versions: dict[str, tuple[str, ...]] = {}
        for g in doc.get("groups", []):
            preferred = g["preferredVersion"]["version"]
            others = (v["version"] for v in g.get("versions", []) if v["version"] != preferred)
            versions[g["name"]] = (preferred, *others)
        return _Doc(versions, None, (), epoch, asked)
    versions = {}
    kinds: dict[str, dict[str, Resource]] = {}
    listable: list[Resource] = []
    for item in doc.get("items") or []:
        group = str(meta_of(item).get("name") or "")  # the core group's name is empty, omitted
        served = item.get("versions") or []  # preferred first
        versions[group] = tuple(str(v["version"]) for v in served)
        for i, v in enumerate(served):
            version = str(v["version"])
            found = kinds.setdefault(f"{group}/{version}" if group else version, {})
            for r in v.get("resources") or []:  # subresources are nested in their resource: never listed here
                kind = (r.get("responseKind") or {}).get("kind")
                if not kind:
                    continue  # only subresources are served for it: no objects of its own
                res = Resource(group, version, str(kind), str(r["resource"]), r.get("scope") == "Namespaced")
                found.setdefault(res.kind, res)
                # An aggregated API whose backend is down is marked Stale: nothing of it can be listed.
                if i == 0 and res.namespaced and "list" in (r.get("verbs") or []) and v.get("freshness") != "Stale":
                    listable.append(res)
    return _Doc(versions, kinds, tuple(listable), epoch, asked)


def _root_of(group: str) -> str:
    return CORE_ROOT if group == "" else GROUPS_ROOT


def _group_of(gv: str) -> str:
    return gv.split("/", 1)[0] if "/" in gv else ""


def _gv_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"
