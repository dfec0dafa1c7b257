"""The engine against an in-memory cluster: order, waiting, retries, denials, skipping, explanations."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from fakecluster import FakeCluster, available, established, obj, ready_endpoint, served_crd

from kfctl.engine import labels, ownership
from kfctl.engine.apply import ApplyOptions, ApplyResult, Engine
from kfctl.engine.events import EventLog
from kfctl.health.waitrules import SHIPPED, Match, WaitRule, WaitRules
from kfctl.k8s.api import ApiError, ProxyAnswer, Unreachable
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.plan.graph import ExternalCheck, PlannedObject, build_plan

FAST = ApplyOptions(concurrency=4, wait_timeout=2.0, timeout=10.0, poll_interval=0.01)
APPSET = "applyset-test-v1"


def run(
    cluster: FakeCluster,
    objects: Sequence[Obj],
    *,
    options: ApplyOptions = FAST,
    depends_on: dict[str, list[str]] | None = None,
    apps: Sequence[tuple[str, Sequence[Obj]]] | None = None,
    wait_rules: WaitRules = SHIPPED,
) -> tuple[ApplyResult, EventLog]:
    plan = build_plan(apps or [("app", objects)], depends_on=depends_on or {}, wait_rules=wait_rules)
    if "Widget" not in cluster.hooks:  # the widget controller reports Ready at once
        cluster.on_apply("Widget", lambda w: w.update(status={"conditions": [{"type": "Ready", "status": "True"}]}))
    log = EventLog()

    def prepare(step: PlannedObject) -> Obj:
        return labels.prepare(step.obj, applyset_id=APPSET, kfdef_name="test", application=step.app)

    # As `kfctl apply` does: read what exists first (objects the test made itself are adopted).
    bundle = [(s.app, s.obj) for s in plan.objects()]
    found = ownership.scan(cluster, bundle, applyset_id=APPSET, inventory=None)
    known = {**found.live, **{f.key: f.live for f in found.foreign}}
    adopting = {f.key: f.owner.description for f in found.foreign}
    engine = Engine(cluster, log, options=options, prepare=prepare, known=known, adopting=adopting)
    return engine.run(plan), log


def position(log: EventLog, kind: str, subject: str) -> int:
    return next(i for i, e in enumerate(log.events) if e.type == kind and e.subject == subject)


CRD = obj(
    "apiextensions.k8s.io/v1",
    "CustomResourceDefinition",
    "widgets.example.com",
    spec={"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}},
)
NS = obj("v1", "Namespace", "demo")
WIDGET = obj("example.com/v1", "Widget", "w", "demo", spec={"size": 1})


def test_a_custom_resource_is_applied_only_after_its_crd_is_established() -> None:
    cluster = FakeCluster()
    result, log = run(cluster, [WIDGET, CRD, NS])
    assert result.ok
    assert position(log, "Healthy", "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com") < position(
        log, "Created", "Widget.example.com demo/w"
    )
    assert position(log, "Healthy", "Namespace demo") < position(log, "Created", "Widget.example.com demo/w")


BROKEN = WaitRules([WaitRule("example.com", "Widget", failed=(Match(field="status.phase", equals="Broken"),))])


@pytest.mark.parametrize(
    ("rules", "healthy", "failed"),
    [
        pytest.param(SHIPPED, ["Widget.example.com demo/w"], [], id="kstatus-ready"),
        pytest.param(BROKEN, [], [("Widget.example.com demo/w", "status.phase is Broken")], id="the-plans-rule"),
    ],
)
def test_the_engine_judges_a_custom_resource_by_the_plans_wait_rule(
    rules: WaitRules, healthy: list[str], failed: list[tuple[str, str]]
) -> None:
    """A Widget whose controller says Ready but phase Broken: healthy by kstatus, failed by a KfDef's rule."""
    cluster = FakeCluster()
    cluster.on_apply(
        "Widget", lambda w: w.update(status={"phase": "Broken", "conditions": [{"type": "Ready", "status": "True"}]})
    )
    result, log = run(cluster, [CRD, NS, WIDGET], wait_rules=rules)
    assert [e.subject for e in log.events if e.type == "Healthy" and "Widget" in e.subject] == healthy
    assert [(f.subject, f.message) for f in result.failed] == failed


def test_reapplying_unchanged_objects_sends_no_writes() -> None:
    cluster = FakeCluster()
    run(cluster, [CRD, NS, WIDGET])
    writes = cluster.stats.writes
    result, log = run(cluster, [CRD, NS, WIDGET])
    assert cluster.stats.writes == writes
    assert sorted(result.unchanged) == sorted(
        [
            "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com",
            "Namespace demo",
            "Widget.example.com demo/w",
        ]
    )
    assert not log.of("Created") and not log.of("Configured")


def test_a_changed_object_is_configured_and_its_hash_moves() -> None:
    cluster = FakeCluster()
    run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "1"})])
    result, _ = run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "2"})])
    assert result.configured == ["ConfigMap demo/c"]
    assert cluster.live(ObjectKey("", "ConfigMap", "demo", "c"))["data"] == {"a": "2"}  # type: ignore[index]


def test_transient_errors_are_retried_with_backoff() -> None:
    cluster = FakeCluster()
    cm = obj("v1", "ConfigMap", "c", "demo")
    cluster.fail(
        ObjectKey("", "ConfigMap", "demo", "c"),
        ApiError(500, 'Internal error occurred: failed calling webhook "x.example.com": connection refused'),
        ApiError(429, "too many requests", retry_after=0.05),
    )
    result, log = run(cluster, [NS, cm])
    assert result.ok
    retries = [e.message for e in log.of("Retrying")]
    assert retries[0].startswith('Internal error occurred: failed calling webhook "x.example.com"')
    assert retries[1] == "throttled: too many requests (retrying in 0.1s)"


def test_a_webhook_denial_fails_fast_quoting_the_server_and_stops_the_run() -> None:
    cluster = FakeCluster()
    denial = 'admission webhook "deny.example.com" denied the request: widgets must be small'
    cluster.fail(ObjectKey("", "ConfigMap", "demo", "a"), ApiError(400, denial, reason="BadRequest"))
    later = obj("v1", "ConfigMap", "b", "demo", annotations={"kfctl.kubeflow.org/depends-on": "ConfigMap/demo/a"})
    result, log = run(cluster, [NS, obj("v1", "ConfigMap", "a", "demo"), later])
    assert [f.message for f in result.failed] == [denial]
    assert result.failed[0].denied
    assert not log.of("Retrying")
    assert [b.subject for b in result.blocked] == ["ConfigMap demo/b"]


@pytest.mark.parametrize(
    "bug", [pytest.param(KeyError("spec"), id="KeyError"), pytest.param(TypeError("int() of None"), id="TypeError")]
)
def test_a_bug_in_a_worker_is_raised_not_reported_as_a_denial_or_a_health_failure(bug: Exception) -> None:
    cluster = FakeCluster()
    cluster.fail(ObjectKey("", "ConfigMap", "demo", "a"), bug)
    with pytest.raises(type(bug)):
        run(cluster, [NS, obj("v1", "ConfigMap", "a", "demo")])


def test_an_immutable_field_change_names_the_field_and_needs_opt_in() -> None:
    cluster = FakeCluster()
    run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "1"})])
    immutable = ApiError(
        422,
        'Deployment.apps "c" is invalid: spec.selector: Invalid value: {...}: field is immutable',
        reason="Invalid",
        causes=[{"field": "spec.selector", "message": "Invalid value: {...}: field is immutable"}],
    )
    key = ObjectKey("", "ConfigMap", "demo", "c")
    cluster.fail(key, immutable)
    result, _ = run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "2"})])
    assert result.failed[0].message.startswith("immutable field(s) changed: spec.selector; re-run with --recreate")

    cluster.fail(key, immutable)
    old_uid = cluster.live(key)["metadata"]["uid"]  # type: ignore[index]
    options = ApplyOptions(concurrency=2, wait_timeout=2, timeout=10, poll_interval=0.01, recreate_immutable=True)
    result, log = run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "2"})], options=options)
    assert result.ok and [e.subject for e in log.of("Recreated")] == ["ConfigMap demo/c"]
    assert cluster.live(key)["metadata"]["uid"] != old_uid  # type: ignore[index]
    # Counted as recreated (the summary line's "1 recreated"), not as configured in place.
    assert (result.recreated, result.configured, result.changed) == (["ConfigMap demo/c"], [], 1)


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "namespace", "why"),
    [
        ("v1", "Namespace", "team", "", "deleting a Namespace deletes everything in it"),
        ("v1", "PersistentVolumeClaim", "data", "demo", "deleting it can delete the data it holds"),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "things.example.org",
            "",
            "deleting a CRD deletes every object of its kind",
        ),
    ],
)
def test_recreate_immutable_never_deletes_what_holds_data(
    api_version: str, kind: str, name: str, namespace: str, why: str
) -> None:
    cluster = FakeCluster()
    desired = obj(api_version, kind, name, namespace, spec={"x": "2"})
    key = key_of(desired)
    cluster.put(obj(api_version, kind, name, namespace, spec={"x": "1"}))
    old_uid = cluster.live(key)["metadata"]["uid"]  # type: ignore[index]
    cluster.fail(
        key, ApiError(422, "field is immutable", causes=[{"field": "spec.x", "message": "field is immutable"}])
    )
    options = ApplyOptions(concurrency=2, wait_timeout=2, timeout=10, poll_interval=0.01, recreate_immutable=True)
    result, log = run(cluster, [NS, desired], options=options)
    assert result.failed[0].message == (
        f"immutable field(s) changed: spec.x; kfctl never recreates it ({why}): change it back in the source, "
        "or migrate by hand (field is immutable)"
    )
    assert not log.of("Recreated")
    assert cluster.live(key)["metadata"]["uid"] == old_uid  # type: ignore[index]


def test_ctrl_c_while_a_recreate_waits_for_the_old_object_to_go_ends_the_run_at_once() -> None:
    cluster = FakeCluster()
    run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "1"})])
    key = ObjectKey("", "ConfigMap", "demo", "c")
    cluster.fail(key, ApiError(422, "field is immutable", causes=[{"field": "data", "message": "field is immutable"}]))
    deleted = threading.Event()

    def delete_held_by_a_finalizer(*args: Any, **kwargs: Any) -> bool:
        deleted.set()
        return True  # accepted, but the object stays

    cluster.delete = delete_held_by_a_finalizer  # type: ignore[method-assign]

    def clock() -> float:  # the user presses Ctrl-C once the worker waits for the old object to go
        if deleted.is_set():
            raise KeyboardInterrupt
        return time.monotonic()

    options = ApplyOptions(concurrency=2, wait_timeout=60, timeout=120, poll_interval=0.01, recreate_immutable=True)
    plan = build_plan([("app", [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "2"})])], depends_on={})
    engine = Engine(
        cluster,
        EventLog(),
        options=options,
        prepare=lambda s: labels.prepare(s.obj or {}, applyset_id=APPSET, kfdef_name="test", application=s.app),
        clock=clock,
    )
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        engine.run(plan)
    assert time.monotonic() - start < 5  # not the 60s wait timeout of the worker's loop


def test_an_unschedulable_deployment_fails_at_its_wait_timeout_with_the_chain_behind_it() -> None:
    cluster = FakeCluster()
    cluster.on_apply(
        "Deployment",
        lambda d: d.update(
            status={"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0}
        ),
    )
    cluster.put(
        obj(
            "v1",
            "Pod",
            "web-abc",
            "demo",
            labels={"app": "web"},
            status={
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
                    }
                ]
            },
        )
    )
    web = obj(
        "apps/v1",
        "Deployment",
        "web",
        "demo",
        spec={
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
    )
    svc = obj("v1", "Service", "web", "demo", spec={"selector": {"app": "web"}})
    hook = obj(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "widgets",
        webhooks=[
            {
                "name": "w.example.com",
                "clientConfig": {"service": {"name": "web", "namespace": "demo"}},
                "rules": [
                    {
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["widgets"],
                    }
                ],
            }
        ],
    )
    options = ApplyOptions(concurrency=4, wait_timeout=0.5, timeout=10, poll_interval=0.01)
    result, _ = run(cluster, [NS, CRD, web, svc, hook, WIDGET], options=options)
    assert [f.subject for f in result.failed] == ["Deployment.apps demo/web"]
    assert result.failed[0].message == (
        "not healthy after --wait-timeout 0.5s: 0/1 available: Unschedulable: 0/3 nodes are available: "
        "3 node(s) didn't match Pod's node affinity/selector."
    )
    blocked = {b.subject: b.chain for b in result.blocked}
    assert blocked["Widget.example.com demo/w"] == (
        "Widget.example.com demo/w",
        "webhook backend demo/web",
        "Deployment.apps demo/web not healthy after --wait-timeout 0.5s: 0/1 available: Unschedulable: 0/3 nodes "
        "are available: 3 node(s) didn't match Pod's node affinity/selector.",
    )


def test_with_one_apply_slot_the_chain_of_waits_goes_before_objects_nothing_waits_for() -> None:
    cluster = FakeCluster()
    cluster.on_apply("Deployment", available)
    loose = [obj("v1", "ConfigMap", f"a-{i}", "demo") for i in range(3)]  # sort ahead of the ServiceAccount
    sa = obj("v1", "ServiceAccount", "z-operator", "demo")
    operator = obj(
        "apps/v1",
        "Deployment",
        "z-operator",
        "demo",
        spec={
            "selector": {"matchLabels": {"app": "z"}},
            "template": {
                "metadata": {"labels": {"app": "z"}},
                "spec": {"serviceAccountName": "z-operator", "containers": [{"name": "c", "image": "x"}]},
            },
        },
    )
    one_slot = ApplyOptions(concurrency=1, wait_timeout=2.0, timeout=10.0, poll_interval=0.01)
    result, log = run(cluster, [NS, *loose, sa, operator], options=one_slot)
    assert result.ok
    created = [e.subject for e in log.events if e.type == "Created"]
    assert created == [
        "Namespace demo",
        "ServiceAccount demo/z-operator",  # the Deployment waits for it: started first
        "Deployment.apps demo/z-operator",  # released by it, and it waits itself: its wait starts sooner
        "ConfigMap demo/a-0",
        "ConfigMap demo/a-1",
        "ConfigMap demo/a-2",
    ]


def test_a_webhook_backend_is_ready_only_with_a_ready_endpoint_and_a_ca_bundle() -> None:
    cluster = FakeCluster()
    result, log = run(cluster, served_webhook(cluster))
    assert result.ok
    assert position(log, "Healthy", "webhook backend demo/web") < position(log, "Created", "Widget.example.com demo/w")
    backend = next(e for e in log.of("Healthy") if e.subject == "webhook backend demo/web")
    assert backend.message == "backend demo/web (1 ready endpoint(s)) ready"


def served_webhook(cluster: FakeCluster) -> list[Obj]:
    """A Deployment, its Service and a side-effect-free validating webhook at /validate, which the fake injects
    (caBundle, a ready endpoint) once applied; then a Widget that webhook admits."""
    web = obj(
        "apps/v1",
        "Deployment",
        "web",
        "demo",
        spec={
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
    )
    svc = obj("v1", "Service", "web", "demo", spec={"selector": {"app": "web"}})
    rule = {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}
    client = {"service": {"name": "web", "namespace": "demo", "path": "/validate"}}
    hook = obj(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "widgets",
        webhooks=[{"name": "w.example.com", "clientConfig": client, "rules": [rule], "sideEffects": "None"}],
    )

    def inject(config: Obj) -> None:
        for h in config["webhooks"]:
            h["clientConfig"]["caBundle"] = "Q0E="
        cluster.put(ready_endpoint("demo", "web"))

    cluster.on_apply("Deployment", available)
    cluster.on_apply("ValidatingWebhookConfiguration", inject)
    return [NS, CRD, web, svc, hook, WIDGET]


NOT_YET = ProxyAnswer(404, from_api_server=False, text="404 page not found")


@pytest.mark.parametrize(
    ("answers", "outcome"),
    [
        # The training operator's case: Ready, Service and endpoint there, its handler registered a moment later.
        ([NOT_YET, NOT_YET, ProxyAnswer(200, from_api_server=False)], "ok"),
        # The handler never comes: the backend is not healthy, and what it admits waits, blocked, naming why.
        (
            [NOT_YET],
            "webhook w.example.com: its server answers but does not serve /validate yet (HTTP 404)",
        ),
        # The API server's own refusal (no create on services/proxy): not asked, the other facts decide.
        ([ProxyAnswer(403, from_api_server=True, text='{"kind":"Status","apiVersion":"v1"}')], "ok"),
        # The backend's own 400 for a review it does not like is an answer: it serves the path.
        ([ProxyAnswer(400, from_api_server=False)], "ok"),
    ],
    ids=["registers-late", "never-registers", "proxy-forbidden", "backend-answers-400"],
)
def test_a_webhook_backend_is_ready_only_when_its_server_serves_the_webhooks_path(
    answers: list[ProxyAnswer], outcome: str
) -> None:
    cluster = FakeCluster()
    cluster.proxied[("demo", "web", "/validate")] = list(answers)
    options = ApplyOptions(concurrency=4, wait_timeout=1.0, timeout=10, poll_interval=0.01)
    result, log = run(cluster, served_webhook(cluster), options=options)
    assert ("demo", "web", 443, "/validate") in cluster.proxy_calls
    if outcome == "ok":
        assert result.ok, result
        assert position(log, "Healthy", "webhook backend demo/web") < position(
            log, "Created", "Widget.example.com demo/w"
        )
    else:
        blocked = {b.subject: b.chain for b in result.blocked}
        assert blocked["Widget.example.com demo/w"] == (
            "Widget.example.com demo/w",
            f"webhook backend demo/web not healthy after --wait-timeout 1s: {outcome}",
        )


def test_an_application_waits_for_the_applications_it_depends_on() -> None:
    cluster = FakeCluster()
    slow: list[int] = []

    def becomes_available_on_second_look(dep: Obj) -> None:
        slow.append(1)
        dep["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}

    cluster.on_apply("Deployment", becomes_available_on_second_look)
    base = [NS, obj("apps/v1", "Deployment", "db", "demo", spec={"template": {"spec": {}}})]
    user = [obj("v1", "ConfigMap", "client", "demo")]
    result, log = run(cluster, [], apps=[("db", base), ("client", user)], depends_on={"client": ["db"]})
    assert result.ok
    assert position(log, "Healthy", "Deployment.apps demo/db") < position(log, "Created", "ConfigMap demo/client")


@pytest.mark.parametrize("timeout", [0.3])
def test_the_overall_timeout_stops_waiting_and_says_so(timeout: float) -> None:
    cluster = FakeCluster()
    cluster.on_apply("Deployment", None)  # never reports status
    options = ApplyOptions(concurrency=2, wait_timeout=30, timeout=timeout, poll_interval=0.01)
    result, _ = run(cluster, [NS, obj("apps/v1", "Deployment", "web", "demo", spec={})], options=options)
    assert result.failed[0].message.startswith(f"not healthy within the overall --timeout of {timeout:g}s")


FORBIDDEN = ApiError(
    403, 'deployments.apps is forbidden: User "u" cannot list resource "deployments"', reason="Forbidden"
)
RESET = Unreachable("connection reset by peer")
AT_LEAST_ONE = "≥ 1"


@pytest.mark.parametrize(
    ("at_start", "before_status", "expected_reads"),
    [
        pytest.param(
            [],
            [],
            {("list_with_version", None): 1, ("watch", None): 1},
            id="watched: one LIST and one WATCH for the four, no read per object",
        ),
        pytest.param(
            [FORBIDDEN],
            [],
            {("list_with_version", None): 1, ("poll", "demo"): AT_LEAST_ONE},
            id="watch forbidden: polled as before watches",
        ),
        pytest.param(
            [],
            [RESET, RESET, RESET],
            {("list_with_version", None): 1, ("watch", None): AT_LEAST_ONE, ("poll", "demo"): AT_LEAST_ONE},
            id="stream broken for good mid-run: polls take over",
        ),
    ],
)
def test_waiting_deployments_are_watched_or_else_polled(
    at_start: list[Exception], before_status: list[Exception], expected_reads: dict[tuple[str, str | None], int | str]
) -> None:
    cluster = FakeCluster()
    cluster.on_apply("Deployment", None)  # no status until the "controller" below catches up
    cluster.fail_watches(*at_start)
    names = [f"web{i}" for i in range(4)]
    reads: list[tuple[str, str | None]] = []  # Deployment reads once the engine wrote something

    def counting(method: str) -> Any:
        real = getattr(cluster, method)

        def read(api_version: str, kind: str, **kw: Any) -> Any:
            if kind == "Deployment" and cluster.writes:
                polled = method in ("get", "list")
                reads.append(("poll" if polled else method, kw.get("namespace")))
            return real(api_version, kind, **kw)

        return read

    for method in ("get", "list", "list_with_version", "watch"):
        setattr(cluster, method, counting(method))

    def controller() -> None:  # writes status as a controller does, through the API: watches see it
        if before_status:
            cluster.fail_watches(*before_status[1:])  # the re-watches fail too
            cluster.break_watches(before_status[0])
            time.sleep(0.1)
        for n in names:
            dep = ObjectKey("apps", "Deployment", "demo", n)
            with cluster._lock:
                status = cluster.objects[dep]
            available(status)
            cluster.set_status(dep, status["status"])

    timer = threading.Timer(0.3, controller)
    timer.start()
    try:
        deployments = [obj("apps/v1", "Deployment", n, "demo", spec={"replicas": 1}) for n in names]
        result, log = run(cluster, [NS, *deployments])
    finally:
        timer.cancel()
    assert result.ok
    assert sorted(e.subject for e in log.of("Healthy") if "Deployment" in e.subject) == [
        f"Deployment.apps demo/{n}" for n in names
    ]
    counted = Counter(reads)
    seen = {
        k: (AT_LEAST_ONE if counted[k] else 0) if v == AT_LEAST_ONE else counted[k] for k, v in expected_reads.items()
    }
    assert seen == expected_reads
    assert set(counted) == set(expected_reads)  # nothing else: no GET per object while the watch is live


def test_a_fresh_apply_reads_live_objects_with_one_labelled_list_per_kind_not_a_get_each() -> None:
    cluster = FakeCluster()
    cms = [obj("v1", "ConfigMap", f"c{i}", "demo") for i in range(5)]
    run(cluster, [NS, *cms])
    gets = cluster.stats.by_method["GET"]
    assert gets < len(cms)
    result, _ = run(cluster, [NS, *cms])
    assert len(result.unchanged) == 6 and cluster.stats.writes == 6  # the first run only


def test_a_re_apply_puts_back_what_someone_changed_in_kfctls_fields_and_names_them() -> None:
    cluster = FakeCluster()
    dep = obj(
        "apps/v1",
        "Deployment",
        "op",
        "demo",
        spec={"replicas": 1, "template": {"spec": {"containers": [{"name": "op", "image": "kubeflow/op:v1"}]}}},
    )
    run(cluster, [NS, dep])
    live = cluster.live(ObjectKey("apps", "Deployment", "demo", "op"))
    assert live is not None
    live["spec"]["replicas"] = 3  # kubectl scale
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "evil/image:latest"  # kubectl set image
    live["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]  # not kfctl's
    writes = cluster.stats.writes
    result, log = run(cluster, [NS, dep])
    assert result.corrected == ["Deployment.apps demo/op"] and cluster.stats.writes == writes + 1
    assert [e.message for e in log.of("Corrected")] == [
        "drift put back: spec.replicas, spec.template.spec.containers[op].image"
    ]
    fixed = cluster.live(ObjectKey("apps", "Deployment", "demo", "op"))
    assert fixed is not None and fixed["spec"]["replicas"] == 1
    assert fixed["spec"]["template"]["spec"]["containers"][0]["image"] == "kubeflow/op:v1"


def test_a_value_the_server_only_rewrote_is_settled_by_a_dry_run_and_not_written() -> None:
    cluster = FakeCluster()
    container = {"name": "op", "image": "kubeflow/op:v1", "resources": {"requests": {"cpu": "0.5"}}}
    dep = obj("apps/v1", "Deployment", "op", "demo", spec={"template": {"spec": {"containers": [container]}}})
    run(cluster, [NS, dep])
    key = ObjectKey("apps", "Deployment", "demo", "op")
    stored = cluster.live(key)
    assert stored is not None
    c = stored["spec"]["template"]["spec"]["containers"][0]
    c["resources"]["requests"]["cpu"] = "500m"  # as the API server canonicalises a quantity
    c["imagePullPolicy"] = "IfNotPresent"  # and a field kfctl does not render
    cluster.fail(key, ApiError(500, "kfctl must not send this object again"))
    writes, dry = cluster.stats.writes, cluster.stats.dry_runs
    result, _ = run(cluster, [NS, dep])
    assert sorted(result.unchanged) == ["Deployment.apps demo/op", "Namespace demo"]
    assert (cluster.stats.writes, cluster.stats.dry_runs) == (writes, dry)  # compared by value: no request


def test_objects_that_exist_under_another_owner_are_reported_as_adopted_with_that_owner() -> None:
    cluster = FakeCluster()
    cluster.put(
        obj(
            "v1",
            "ConfigMap",
            "c",
            "demo",
            labels={"app.kubernetes.io/managed-by": "Helm"},
            annotations={"meta.helm.sh/release-name": "r", "meta.helm.sh/release-namespace": "demo"},
        )
    )
    result, log = run(cluster, [NS, obj("v1", "ConfigMap", "c", "demo", data={"a": "1"})])
    assert result.adopted == ["ConfigMap demo/c"]
    assert [e.message for e in log.of("Adopted")] == ["taken over from Helm release demo/r"]


def test_an_external_application_is_checked_then_what_depends_on_it_applies() -> None:
    """An external application's step (kfctl.engine.steps.ExternalWait) has nothing to apply: it is checked until
    the CRDs it names are served, and only then does an application after it start."""
    cluster = FakeCluster()
    crd = served_crd("cert-manager.io", "Certificate", "certificates")
    established(crd)
    cluster.put(crd)
    cm = obj("v1", "ConfigMap", "c", namespace="default", data={"a": "b"})
    plan = build_plan(
        [("app", [cm])],
        depends_on={"app": ["cm"]},
        externals=[ExternalCheck("cm", ("certificates.cert-manager.io",))],
    )
    log = EventLog()
    engine = Engine(
        cluster,
        log,
        options=FAST,
        prepare=lambda s: labels.prepare(s.obj or {}, applyset_id=APPSET, kfdef_name="t", application=s.app),
    )
    result = engine.run(plan)
    assert result.ok, log.events
    assert position(log, "Healthy", "external application cm") < position(log, "Created", "ConfigMap default/c")
