"""Discovery over HTTP, against a fake API server that answers either aggregated discovery (Kubernetes ≥ 1.30)
or only the plain per-group-version documents (older servers): each row a sequence of lookups, the exact
mappings or errors they give and the exact discovery requests the client sent for them.

The fake server holds one model of groups, versions and resources and renders it both ways, as the API server
does; the client under test is the real :class:`kfctl.k8s.client.KubeClient` over a fake connection pool.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from kfctl.k8s.api import ClusterInfo, NoKindMatch, Resource
from kfctl.k8s.client import KubeClient
from kfctl.k8s.discovery import AGGREGATED, Discovery
from kfctl.objects import ObjectKey


@dataclass(frozen=True)
class Res:
    """One resource of the model: its plural, kind, scope, verbs and subresources (name -> kind)."""

    plural: str
    kind: str
    namespaced: bool = True
    verbs: tuple[str, ...] = ("get", "list", "patch")
    subresources: tuple[tuple[str, str], ...] = ()


@dataclass
class Version:
    name: str
    resources: list[Res]
    stale: bool = False  # an aggregated API whose backend is down
    fails: bool = False  # its own document answers 503 (the same down backend, asked the old way)


DEPLOYMENT = Res("deployments", "Deployment", subresources=(("scale", "Scale"), ("status", "Deployment")))
CONFIGMAP = Res("configmaps", "ConfigMap")
NAMESPACE = Res("namespaces", "Namespace", namespaced=False)
HPA = Res("horizontalpodautoscalers", "HorizontalPodAutoscaler")
NOTEBOOK = Res("notebooks", "Notebook")
PROFILE = Res("profiles", "Profile", namespaced=False)
BINDING = Res("bindings", "Binding", verbs=("create",))
METRICS = Res("pods", "PodMetrics", verbs=("get", "list"))


def builtin_model() -> dict[str, list[Version]]:
    return {
        "": [Version("v1", [CONFIGMAP, NAMESPACE, BINDING])],
        "apps": [Version("v1", [DEPLOYMENT])],
        "autoscaling": [Version("v2", [HPA]), Version("v1", [HPA])],
    }


@dataclass
class FakeServer:
    """Answers discovery from ``model``; ``aggregated``: as a server with aggregated discovery does."""

    model: dict[str, list[Version]]
    aggregated: bool = True
    requests: list[str] = field(default_factory=list)
    delay: float = 0.0  # seconds each answer takes, so that concurrent lookups overlap
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def request(self, method: str, url: str, *, headers: dict[str, str], **_: Any) -> Response:
        path = url.removeprefix("https://fake:6443")
        wants_aggregated = "as=APIGroupDiscoveryList" in headers["Accept"]
        with self._lock:
            self.requests.append(f"{method} {path}" + (" (aggregated)" if wants_aggregated else ""))
            model = {g: list(vs) for g, vs in self.model.items()}  # as it is when the request arrives
        time.sleep(self.delay)
        if path in ("/api", "/apis"):
            groups = {g: vs for g, vs in model.items() if (g == "") == (path == "/api")}
            if self.aggregated and wants_aggregated:
                return Response(200, _aggregated(groups))
            if path == "/api":
                return Response(200, {"kind": "APIVersions", "versions": ["v1"]})
            return Response(200, _group_list(groups))
        group, _, version = path.removeprefix("/apis/").removeprefix("/api").strip("/").rpartition("/")
        for v in model.get(group, []):
            if v.name == version:
                if v.fails:
                    return Response(503, {"kind": "Status", "code": 503, "message": "service unavailable"})
                return Response(200, _resource_list(group, v))
        return Response(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"})


@dataclass
class Response:
    status: int
    doc: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return json.dumps(self.doc).encode()


def _aggregated(groups: dict[str, list[Version]]) -> dict[str, Any]:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "items": [
            {
                "metadata": {"name": g} if g else {"creationTimestamp": None},
                "versions": [
                    {
                        "version": v.name,
                        "freshness": "Stale" if v.stale else "Current",
                        "resources": [
                            {
                                "resource": r.plural,
                                "responseKind": {"group": "", "version": "", "kind": r.kind},
                                "scope": "Namespaced" if r.namespaced else "Cluster",
                                "verbs": list(r.verbs),
                                "subresources": [
                                    {"subresource": s, "responseKind": {"group": "", "version": "", "kind": k}}
                                    for s, k in r.subresources
                                ],
                            }
                            for r in v.resources
                        ],
                    }
                    for v in versions
                ],
            }
            for g, versions in groups.items()
        ],
    }


def _group_list(groups: dict[str, list[Version]]) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": g,
                "versions": [{"groupVersion": f"{g}/{v.name}", "version": v.name} for v in versions],
                "preferredVersion": {"groupVersion": f"{g}/{versions[0].name}", "version": versions[0].name},
            }
            for g, versions in groups.items()
        ],
    }


def _resource_list(group: str, version: Version) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for r in version.resources:
        resources.append({"name": r.plural, "kind": r.kind, "namespaced": r.namespaced, "verbs": list(r.verbs)})
        for sub, kind in r.subresources:
            resources.append({"name": f"{r.plural}/{sub}", "kind": kind, "namespaced": r.namespaced, "verbs": []})
    gv = f"{group}/{version.name}" if group else version.name
    return {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}


class _Config:
    host = "https://fake:6443"

    def auth_settings(self) -> dict[str, Any]:
        return {}

    def get_api_key_with_prefix(self, _: str) -> None:
        return None


class _Api:
    def __init__(self, server: FakeServer) -> None:
        self.configuration = _Config()
        self.rest_client = type("RestClient", (), {"pool_manager": server})()


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def client_for(server: FakeServer, clock: Clock | None = None) -> KubeClient:
    client = KubeClient(_Api(server), ClusterInfo(server="https://fake:6443", context="fake", kubeconfig="-"))
    if clock is not None:
        client._discovery = Discovery(client._discovery_get, clock=clock)
    return client


def lookup(client: KubeClient, api: str, kind: str) -> Resource | str:
    """``api`` is an apiVersion ("apps/v1", "v1"), or a group alone to ask for the kind's preferred version."""
    try:
        if "/" in api or api == "v1":
            return client.resource(api, kind)
        return client.resource_for_key(ObjectKey(api, kind, "", ""))
    except NoKindMatch as e:
        return f"NoKindMatch: {e}"


AGG = " (aggregated)"

# Each row: lookups in order (at a time in seconds, an apiVersion or a group alone for resource_for_key, a
# kind), then the results and the discovery requests against an aggregated server and against an older one.
CASES = [
    pytest.param(
        [(0, "apps/v1", "Deployment"), (0, "v1", "ConfigMap"), (9, "apps/v1", "Deployment"), (9, "v1", "Namespace")],
        [
            Resource("apps", "v1", "Deployment", "deployments", True),
            Resource("", "v1", "ConfigMap", "configmaps", True),
            Resource("apps", "v1", "Deployment", "deployments", True),
            Resource("", "v1", "Namespace", "namespaces", False),
        ],
        [f"GET /apis{AGG}", f"GET /api{AGG}"],
        [f"GET /apis{AGG}", "GET /apis/apps/v1", f"GET /api{AGG}", "GET /api/v1"],
        id="builtin kinds: two requests in all, then the cache",
    ),
    pytest.param(
        [(0, "apps/v1", "Scale"), (0, "apps/v1", "Deployment")],
        [
            'NoKindMatch: no matches for kind "Scale" in version "apps/v1"',
            Resource("apps", "v1", "Deployment", "deployments", True),
        ],
        # a miss in the document this very lookup fetched is final: no second request for it
        [f"GET /apis{AGG}"],
        [f"GET /apis{AGG}", "GET /apis/apps/v1"],
        id="subresources (deployments/scale) are not kinds",
    ),
    pytest.param(
        [(0, "autoscaling", "HorizontalPodAutoscaler"), (0, "autoscaling/v1", "HorizontalPodAutoscaler")],
        [
            Resource("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
            Resource("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
        ],
        [f"GET /apis{AGG}"],
        [f"GET /apis{AGG}", "GET /apis/autoscaling/v2", "GET /apis/autoscaling/v1"],
        id="several versions: the preferred one first, any served one by name",
    ),
    pytest.param(
        [(0, "v1", "Pod"), (0.4, "v1", "Pod"), (0.5, "", "Pod"), (0.9, "v1", "Pod"), (1.0, "v1", "Pod")],
        ['NoKindMatch: no matches for kind "Pod" in version "v1"'] * 5,
        [f"GET /api{AGG}", f"GET /api{AGG}", f"GET /api{AGG}"],
        [f"GET /api{AGG}", "GET /api/v1", f"GET /api{AGG}", "GET /api/v1", f"GET /api{AGG}", "GET /api/v1"],
        id="an unserved kind: asked again when the answer is half a second old, not before",
    ),
]


@pytest.mark.parametrize(("lookups", "results", "aggregated_requests", "legacy_requests"), CASES)
@pytest.mark.parametrize("aggregated", [True, False], ids=["aggregated", "legacy"])
def test_lookups(
    lookups: list[tuple[float, str, str]],
    results: list[Resource | str],
    aggregated_requests: list[str],
    legacy_requests: list[str],
    aggregated: bool,
) -> None:
    server = FakeServer(builtin_model(), aggregated=aggregated)
    clock = Clock()
    client = client_for(server, clock)
    got = []
    for at, api, kind in lookups:
        clock.now = at
        got.append(lookup(client, api, kind))
    assert got == results
    assert server.requests == (aggregated_requests if aggregated else legacy_requests)
    assert client.stats.by_method["GET"] == len(server.requests)


@pytest.mark.parametrize(
    ("aggregated", "requests"),
    [
        pytest.param(
            True,
            [f"GET /apis{AGG}", f"GET /apis{AGG}", f"GET /apis{AGG}"],
            id="aggregated",
        ),
        pytest.param(
            False,
            [
                f"GET /apis{AGG}",
                "GET /apis/kubeflow.org/v1",
                f"GET /apis{AGG}",
                "GET /apis/kubeflow.org/v1",
                f"GET /apis{AGG}",
                "GET /apis/kubeflow.org/v1",
            ],
            id="legacy",
        ),
    ],
)
def test_invalidate_then_new_kind(aggregated: bool, requests: list[str]) -> None:
    """A CRD of an existing group becomes Established and kfctl invalidates the group. The server's document
    may lag a moment: the lookup right after fails without asking twice, one 0.2 s later does not ask (the
    answer is too young), one a second later asks again and finds the kind."""
    model = builtin_model() | {"kubeflow.org": [Version("v1", [PROFILE])]}
    server = FakeServer(model, aggregated=aggregated)
    clock = Clock()
    client = client_for(server, clock)
    missing = 'NoKindMatch: no matches for kind "Notebook" in version "kubeflow.org/v1"'
    assert lookup(client, "kubeflow.org/v1", "Notebook") == missing  # at 0: before its CRD
    clock.now = 5.0
    client.invalidate("kubeflow.org")  # Established, but the server's document lags
    assert lookup(client, "kubeflow.org/v1", "Notebook") == missing
    model["kubeflow.org"][0].resources.append(NOTEBOOK)
    clock.now = 5.2
    assert lookup(client, "kubeflow.org/v1", "Notebook") == missing
    clock.now = 6.0
    assert [lookup(client, "kubeflow.org/v1", "Notebook"), lookup(client, "kubeflow.org/v1", "Profile")] == [
        Resource("kubeflow.org", "v1", "Notebook", "notebooks", True),
        Resource("kubeflow.org", "v1", "Profile", "profiles", False),
    ]
    assert server.requests == requests


def test_invalidate_forgets_a_removed_version() -> None:
    """A kind the cache still maps at a version its CRD no longer serves is looked up afresh after invalidate."""
    model = builtin_model() | {"kubeflow.org": [Version("v1", [NOTEBOOK]), Version("v1beta1", [NOTEBOOK])]}
    server = FakeServer(model)
    client = client_for(server)
    assert client.resource("kubeflow.org/v1beta1", "Notebook").version == "v1beta1"
    model["kubeflow.org"] = [Version("v1", [NOTEBOOK])]
    assert client.resource("kubeflow.org/v1beta1", "Notebook").version == "v1beta1"  # cached: not asked
    client.invalidate("kubeflow.org")
    assert lookup(client, "kubeflow.org/v1beta1", "Notebook") == (
        'NoKindMatch: no matches for kind "Notebook" in version "kubeflow.org/v1beta1"'
    )
    assert server.requests == [f"GET /apis{AGG}", f"GET /apis{AGG}"]


def test_a_burst_of_invalidations_costs_one_request() -> None:
    """60 CRDs of 60 groups become Established together; 60 workers then map their kinds at once: one
    refresh of /apis serves them all (the others wait for it rather than asking again)."""
    groups = [f"g{i}.example.com" for i in range(60)]
    model = builtin_model()
    server = FakeServer(model, delay=0.05)
    client = client_for(server)
    client.resource("apps/v1", "Deployment")
    for g in groups:
        model[g] = [Version("v1", [Res("widgets", "Widget")])]
        client.invalidate(g)
    with ThreadPoolExecutor(max_workers=16) as pool:
        found = list(pool.map(lambda g: client.resource(f"{g}/v1", "Widget"), groups))
    assert found == [Resource(g, "v1", "Widget", "widgets", True) for g in groups]
    assert server.requests == [f"GET /apis{AGG}", f"GET /apis{AGG}"]


@pytest.mark.parametrize(
    ("aggregated", "requests"),
    [
        pytest.param(True, [f"GET /api{AGG}", f"GET /apis{AGG}"], id="aggregated"),
        pytest.param(
            False,
            [
                f"GET /api{AGG}",
                "GET /api/v1",
                f"GET /apis{AGG}",
                "GET /apis/apps/v1",
                "GET /apis/autoscaling/v2",
                "GET /apis/metrics.k8s.io/v1beta1",
            ],
            id="legacy",
        ),
    ],
)
def test_namespaced_resources(aggregated: bool, requests: list[str]) -> None:
    """Every namespaced kind that can be listed, at its group's preferred version; not Bindings (create
    only), nor Namespaces (cluster-scoped), nor the kinds of an aggregated API whose backend is down."""
    model = builtin_model() | {"metrics.k8s.io": [Version("v1beta1", [METRICS], stale=True, fails=True)]}
    server = FakeServer(model, aggregated=aggregated)
    assert client_for(server).namespaced_resources() == (
        Resource("", "v1", "ConfigMap", "configmaps", True),
        Resource("apps", "v1", "Deployment", "deployments", True),
        Resource("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    )
    assert server.requests == requests


def test_the_accept_header_asks_for_v2_then_v2beta1_then_plain_json() -> None:
    assert AGGREGATED.split(",") == [
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        "application/json",
    ]
