"""Deleting or pruning a Namespace never takes a user's (or another kfctl app's) objects with it.

A namespace is deleted only when everything left in it is ours or made by Kubernetes itself (the default
ServiceAccount, kube-root-ca.crt, Events, endpoints, owned ReplicaSets/Pods …); otherwise it is kept and the
objects that kept it are named, unless --force-namespaces. Also: removal rides out a restarting API server
and reports a refusal as one.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakecluster import FakeCluster, obj

from kfctl.engine import labels
from kfctl.engine.events import EventLog
from kfctl.engine.foreign import automatic, secrets_named_by
from kfctl.engine.inventory import ID_LABEL, Member
from kfctl.engine.remove import RemoveOptions, remove
from kfctl.k8s.api import ApiError, Unreachable
from kfctl.objects import Obj, ObjectKey, key_of

OURS = "applyset-ours-v1"
THEIRS = "applyset-theirs-v1"
DELETE = RemoveOptions(namespaces=True, crds=True, wait_timeout=2.0, poll_interval=0.01)
NS = ObjectKey("", "Namespace", "", "shared")


def ours(o: Obj) -> Obj:
    return labels.prepare(o, applyset_id=OURS, kfdef_name="demo", application="app")


def theirs(o: Obj) -> Obj:
    return labels.prepare(o, applyset_id=THEIRS, kfdef_name="other", application="app")


def member(cluster: FakeCluster, o: Obj) -> Member:
    stored = cluster.put(o)
    return Member(key_of(stored), "app", stored["metadata"]["uid"])


def setup(*extra: Obj) -> tuple[FakeCluster, list[Member]]:
    cluster = FakeCluster()
    items = [member(cluster, ours(obj("v1", "Namespace", "shared"))), member(cluster, ours(cm("mine")))]
    # Our own inventory often lives in the namespace it installs: it never keeps it.
    cluster.put(cm("kfctl-inventory-demo", labels={ID_LABEL: OURS}))
    for o in extra:
        cluster.put(o)
    return cluster, items


def cm(name: str, **fields: Any) -> Obj:
    return obj("v1", "ConfigMap", name, "shared", data={"k": "v"}, **fields)


def run(cluster: FakeCluster, items: list[Member], options: RemoveOptions = DELETE) -> tuple[Any, EventLog]:
    log = EventLog()
    return remove(cluster, items, applyset_id=OURS, reporter=log, options=options, verb="Deleted"), log


def test_a_namespace_holding_a_users_object_is_kept_and_the_object_named() -> None:
    cluster, items = setup(cm("user-data"), obj("v1", "Secret", "user-token", "shared", data={"t": "eA=="}))
    result, log = run(cluster, items)
    assert result.removed == [items[1].key]  # our ConfigMap went
    assert [k for k, _ in result.kept] == [NS]
    why = dict(result.kept)[NS]
    assert why == (
        "holds 2 object(s) kfctl did not apply: ConfigMap shared/user-data, Secret shared/user-token; "
        "kept without --force-namespaces"
    )
    assert [e.message for e in log.of("Kept")] == [why]
    assert cluster.live(ObjectKey("", "ConfigMap", "shared", "user-data")) is not None
    assert result.ok


def test_another_kfctl_apps_objects_keep_a_shared_namespace_and_are_named_with_the_app() -> None:
    cluster, items = setup(theirs(cm("their-config")))
    result, _ = run(cluster, items)
    assert dict(result.kept)[NS].startswith(
        "holds 1 object(s) kfctl did not apply: ConfigMap shared/their-config (kfctl app other)"
    )
    assert cluster.live(ObjectKey("", "ConfigMap", "shared", "their-config")) is not None


@pytest.mark.parametrize(
    "made_by_kubernetes",
    [
        pytest.param(obj("v1", "ServiceAccount", "default", "shared"), id="default-serviceaccount"),
        pytest.param(cm("kube-root-ca.crt"), id="root-ca-configmap"),
        pytest.param(obj("v1", "Event", "web.1234", "shared"), id="event"),
        pytest.param(
            obj("apps/v1", "StatefulSet", "web-abc", "shared", spec={})
            | {"metadata": {"name": "web-abc", "namespace": "shared", "ownerReferences": [{"uid": "x"}]}},
            id="owned-by-a-workload",
        ),
        pytest.param(
            obj("v1", "Secret", "webhook-tls", "shared", annotations={"cert-manager.io/certificate-name": "c"}),
            id="cert-manager-secret",
        ),
        pytest.param(obj("discovery.k8s.io/v1", "EndpointSlice", "svc-x1", "shared", endpoints=[]), id="endpointslice"),
        pytest.param(
            cm("leader", annotations={"control-plane.alpha.kubernetes.io/leader": "{}"}), id="leader-configmap"
        ),
    ],
)
def test_objects_kubernetes_makes_by_itself_do_not_keep_a_namespace(made_by_kubernetes: Obj) -> None:
    cluster, items = setup(made_by_kubernetes)
    result, _ = run(cluster, items)
    assert result.kept == [] and sorted(result.removed) == sorted(m.key for m in items)


def test_automatic_covers_leases_and_objects_being_deleted() -> None:
    lease = obj("coordination.k8s.io/v1", "Lease", "operator-lock", "shared")
    assert automatic(lease, "coordination.k8s.io")
    going = cm("going") | {"metadata": {"name": "going", "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    assert automatic(going, "")
    assert not automatic(cm("user-data"), "")
    assert not automatic(obj("v1", "ServiceAccount", "builder", "shared"), "")


def workload(kind: str, *args: str, namespace: str = "shared", env: list[dict[str, Any]] | None = None) -> Obj:
    pod = {"containers": [{"name": "c", "image": "x", "args": list(args), "env": env or []}]}
    spec: dict[str, Any] = {"template": {"spec": pod}}
    if kind == "CronJob":
        return obj("batch/v1", kind, "w", namespace, spec={"jobTemplate": {"spec": spec}})
    return obj("batch/v1" if kind == "Job" else "apps/v1", kind, "w", namespace, spec=spec)


def secret(namespace: str, name: str) -> ObjectKey:
    return ObjectKey("", "Secret", namespace, name)


@pytest.mark.parametrize(
    ("made", "named"),
    [
        pytest.param(
            workload(
                "Deployment",
                "webhook",
                "--webhook-secret-name=spark-operator-webhook-certs",
                "--webhook-secret-namespace=kubeflow",
                "--webhook-svc-name=spark-operator-webhook-svc",
            ),
            {secret("kubeflow", "spark-operator-webhook-certs")},
            id="spark-webhook-name-and-namespace",
        ),
        pytest.param(
            workload("StatefulSet", "--cert-secret-name=own-cert"), {secret("shared", "own-cert")}, id="own-namespace"
        ),
        pytest.param(workload("DaemonSet", '--tls-secret="quoted"'), {secret("shared", "quoted")}, id="quoted"),
        pytest.param(
            workload(
                "Deployment",
                "--dynamic-serving-ca-secret-namespace=$(POD_NAMESPACE)",
                "--dynamic-serving-ca-secret-name=$(NAME)-ca",
                env=[
                    {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "NAME", "value": "cert-manager-webhook"},
                ],
                namespace="cert-manager",
            ),
            {secret("cert-manager", "cert-manager-webhook-ca")},
            id="expanded-as-the-kubelet-does",
        ),
        pytest.param(workload("Deployment", "--secret-name=$(UNKNOWN)"), set(), id="unknown-variable"),
        pytest.param(workload("CronJob", "--secret=job-token"), {secret("shared", "job-token")}, id="cronjob"),
        pytest.param(workload("Job", "--secret-namespace=other"), set(), id="a-namespace-names-no-secret"),
        pytest.param(workload("Deployment", "--secret-name", "spaced"), set(), id="two-token-form-not-read"),
        pytest.param(workload("Deployment", "--secret-name="), set(), id="empty"),
        pytest.param(workload("Deployment", "--configmap-name=cfg"), set(), id="configmaps-are-not-secrets"),
    ],
)
def test_secrets_a_workload_names_in_its_arguments(made: Obj, named: set[ObjectKey]) -> None:
    assert secrets_named_by(made) == named


def test_a_secret_our_workload_made_for_itself_does_not_keep_its_namespace() -> None:
    """The Spark operator's webhook writes its own serving certificate into the Secret its arguments name; that
    Secret carries no label of ours, yet it is the install's: the namespace goes. A Secret nobody named stays the
    user's and keeps it."""
    made = obj("v1", "Secret", "webhook-certs", "shared", data={"ca-cert.pem": "eA=="})
    deployment = ours(
        workload("Deployment", "--webhook-secret-name=webhook-certs", "--webhook-secret-namespace=shared")
    )
    cluster, items = setup(made)
    items.append(member(cluster, deployment))
    result, _ = run(cluster, items)
    assert result.kept == [] and NS in result.removed

    user = obj("v1", "Secret", "user-token", "shared", data={"t": "eA=="})
    cluster, items = setup(made, user)
    items.append(member(cluster, deployment))
    result, _ = run(cluster, items)
    assert dict(result.kept)[NS] == (
        "holds 1 object(s) kfctl did not apply: Secret shared/user-token; kept without --force-namespaces"
    )


def test_a_service_named_as_a_lease_of_the_namespace_does_not_keep_it() -> None:
    """Knative's autoscaler holds the Lease autoscaler-bucket-00-of-01 and makes a Service (and Endpoints) of that
    name for it, with no label of ours and no owner: it goes with the namespace. A Service no Lease names stays the
    user's and keeps it."""
    lease = obj("coordination.k8s.io/v1", "Lease", "autoscaler-bucket-00-of-01", "shared", spec={"holderIdentity": "a"})
    bucket = obj("v1", "Service", "autoscaler-bucket-00-of-01", "shared", spec={"ports": [{"port": 8080}]})
    cluster, items = setup(lease, bucket)
    result, _ = run(cluster, items)
    assert result.kept == [] and NS in result.removed

    user = obj("v1", "Service", "my-svc", "shared", spec={"ports": [{"port": 80}]})
    cluster, items = setup(lease, bucket, user)
    result, _ = run(cluster, items)
    assert dict(result.kept)[NS] == (
        "holds 1 object(s) kfctl did not apply: Service shared/my-svc; kept without --force-namespaces"
    )


def test_force_namespaces_deletes_the_namespace_and_what_is_in_it() -> None:
    cluster, items = setup(cm("user-data"))
    forced = RemoveOptions(namespaces=True, crds=True, wait_timeout=2.0, poll_interval=0.01, force_namespaces=True)
    result, _ = run(cluster, items, forced)
    assert result.kept == [] and NS in result.removed
    assert cluster.live(ObjectKey("", "ConfigMap", "shared", "user-data")) is None


def test_prune_names_its_own_flag_when_a_namespace_is_kept() -> None:
    cluster, items = setup(cm("user-data"))
    prune = RemoveOptions(namespaces=True, wait_timeout=2.0, poll_interval=0.01)
    result, _ = run(cluster, items, prune)
    assert dict(result.kept)[NS].endswith("kept without --force-namespaces")


def test_a_custom_resource_of_the_user_keeps_the_namespace() -> None:
    cluster = FakeCluster()
    crd = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "widgets.example.com",
        spec={"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}},
    )
    cluster.apply(crd)  # someone else's CRD: established by the fake's hook
    items = [member(cluster, ours(obj("v1", "Namespace", "shared")))]
    cluster.put(obj("example.com/v1", "Widget", "precious", "shared"))
    result, _ = run(cluster, items)
    assert "Widget.example.com shared/precious" in dict(result.kept)[NS]


class Flaky(FakeCluster):
    """Fails the first ``n`` reads and deletes as a restarting API server does."""

    def __init__(self, n: int, error: Exception) -> None:
        super().__init__()
        self.left = n
        self.error = error

    def _maybe_fail(self) -> None:
        if self.left > 0:
            self.left -= 1
            raise self.error

    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        self._maybe_fail()
        return super().get(api_version, kind, namespace=namespace, name=name)

    def delete(self, api_version: str, kind: str, *, namespace: str, name: str, uid: str | None = None) -> bool:
        self._maybe_fail()
        return super().delete(api_version, kind, namespace=namespace, name=name, uid=uid)


def test_removal_rides_out_a_restarting_api_server() -> None:
    cluster = Flaky(0, Unreachable("connection refused"))
    items = [member(cluster, ours(cm("a"))), member(cluster, ours(cm("b")))]
    cluster.left = 5
    log = EventLog()
    result = remove(
        cluster, items, applyset_id=OURS, reporter=log, options=DELETE, verb="Deleted", sleep=lambda _: None
    )
    assert sorted(result.removed) == sorted(m.key for m in items) and result.ok


def test_a_refused_delete_is_reported_as_a_denial_and_nothing_is_lost_track_of() -> None:
    forbidden = ApiError(
        403,
        'configmaps "a" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" '
        'in the namespace "shared"',
        reason="Forbidden",
    )
    cluster = Flaky(0, forbidden)
    items = [member(cluster, ours(cm("a")))]
    cluster.left = 1
    result, log = run(cluster, items)
    assert [e.type for e in log.events] == ["Failed"]
    assert not result.ok and result.denied
    assert [k for k, _ in result.failed] == [items[0].key]
    assert "cannot delete resource" in result.failed[0][1]
    assert cluster.live(items[0].key) is not None


class ListsFail(FakeCluster):
    """Lists of the namespace's ConfigMaps fail with the scripted errors, one per call, then answer."""

    def __init__(self, *errors: Exception) -> None:
        super().__init__()
        self.errors = list(errors)
        self.calls = 0

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        if kind == "ConfigMap" and namespace == "shared":
            self.calls += 1
            if self.errors:
                raise self.errors.pop(0)
        return super().list(api_version, kind, namespace=namespace, label_selector=label_selector)


TIMED_OUT = ApiError(500, "etcdserver: request timed out", reason="InternalError")
GONE = ApiError(404, "the server could not find the requested resource", reason="NotFound")
FORBIDDEN = ApiError(403, 'configmaps is forbidden: User "bob" cannot list resource "configmaps"', reason="Forbidden")


UNCHECKED = "not deleted, as it may hold objects kfctl did not apply; re-run"
USERS = obj("v1", "Secret", "users", "shared")  # not ours: seen while the ConfigMaps cannot be listed


@pytest.mark.parametrize(
    ("errors", "extra", "failed", "kept", "lists"),
    [
        pytest.param([TIMED_OUT] * 2, (), "", "", 3, id="transient-then-answers"),
        pytest.param(
            [TIMED_OUT] * 100,
            (),
            f"cannot check what it holds (configmaps: {TIMED_OUT}); {UNCHECKED}",
            "",
            None,
            id="transient-until-the-deadline",
        ),
        pytest.param([GONE], (), "", "", 1, id="kind-not-served-at-once"),
        pytest.param(
            [FORBIDDEN],
            (),
            f"cannot check what it holds (configmaps: {FORBIDDEN}); {UNCHECKED}",
            "",
            1,
            id="forbidden-at-once",
        ),
        pytest.param(
            [FORBIDDEN],
            (USERS,),
            "",
            "holds 1 object(s) kfctl did not apply: Secret shared/users; "
            f"cannot check what it holds (configmaps: {FORBIDDEN}); kept without --force-namespaces",
            1,
            id="a-users-object-and-forbidden",
        ),
    ],
)
def test_a_namespace_whose_contents_cannot_be_listed_is_not_deleted_and_the_run_fails_once_retrying_cannot_help(
    errors: list[Exception], extra: tuple[Obj, ...], failed: str, kept: str, lists: int | None
) -> None:
    """A kind that cannot be listed leaves what the namespace holds unknown: the namespace is not deleted, and
    that is a failure of the run (denied when the API server refused the list), not a namespace kept on purpose:
    it is not released, so a re-run finishes the job. That only once transient failures were retried until the
    phase's deadline; a kind no longer served holds nothing. A user's object seen beside it keeps the namespace
    on purpose, as ever, naming both."""
    cluster = ListsFail()
    items = [member(cluster, ours(obj("v1", "Namespace", "shared"))), member(cluster, ours(cm("mine")))]
    for o in extra:
        cluster.put(o)
    cluster.errors = list(errors)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    result = remove(
        cluster,
        items,
        applyset_id=OURS,
        reporter=EventLog(),
        options=RemoveOptions(namespaces=True, crds=True, wait_timeout=2.0, poll_interval=0.01, release_kept=True),
        verb="Deleted",
        clock=lambda: now[0],
        sleep=sleep,
    )
    assert dict(result.failed).get(NS, "") == failed
    assert result.denied == (FORBIDDEN in errors and not kept)
    assert dict(result.kept).get(NS, "") == kept
    assert result.released == ([NS] if kept else [])
    assert (NS in result.removed) == (not failed and not kept)
    if lists is not None:
        assert cluster.calls == lists
    else:
        assert now[0] >= DELETE.wait_timeout, "retried until the phase's deadline"
