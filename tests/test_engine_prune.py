"""Prune and delete: only what is still ours, protected kinds only with a flag, in reverse order."""

from __future__ import annotations

from fakecluster import FakeCluster, obj

from kfctl.engine import labels
from kfctl.engine.events import EventLog
from kfctl.engine.inventory import Member
from kfctl.engine.remove import RemoveOptions, remove
from kfctl.objects import Obj, ObjectKey, key_of

OURS = "applyset-ours-v1"
FAST = RemoveOptions(wait_timeout=1.0, poll_interval=0.01)


def ours(o: Obj) -> Obj:
    return labels.prepare(o, applyset_id=OURS, kfdef_name="demo", application="app")


def members(cluster: FakeCluster, *objs: Obj) -> list[Member]:
    out = []
    for o in objs:
        stored = cluster.put(o)
        out.append(Member(key_of(stored), "app", stored["metadata"]["uid"]))
    return out


def test_prune_deletes_only_objects_that_still_carry_our_label_and_uid() -> None:
    cluster = FakeCluster()
    ns = cluster.put(obj("v1", "Namespace", "demo"))
    mine, relabelled, recreated = members(
        cluster,
        ours(obj("v1", "ConfigMap", "mine", "demo")),
        obj("v1", "ConfigMap", "taken-over", "demo", labels={labels.PART_OF: "applyset-other-v1"}),
        ours(obj("v1", "ConfigMap", "recreated", "demo")),
    )
    cluster.objects[recreated.key]["metadata"]["uid"] = "someone-else"
    log = EventLog()
    result = remove(cluster, [mine, relabelled, recreated], applyset_id=OURS, reporter=log, options=FAST, verb="Pruned")
    assert result.removed == [mine.key]
    assert dict(result.skipped) == {
        relabelled.key: "no longer carries our label; left alone",
        recreated.key: "was recreated by someone else (UID differs); left alone",
    }
    assert cluster.live(relabelled.key) is not None and cluster.live(recreated.key) is not None
    assert ns


def test_namespaces_crds_and_storage_are_kept_without_their_flags() -> None:
    cluster = FakeCluster()
    crd = ours(
        obj(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "widgets.example.com",
            spec={"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}},
        )
    )
    items = members(
        cluster, ours(obj("v1", "Namespace", "demo")), crd, ours(obj("v1", "PersistentVolumeClaim", "data", "demo"))
    )
    log = EventLog()
    result = remove(cluster, items, applyset_id=OURS, reporter=log, options=FAST, verb="Pruned")
    assert result.removed == []
    assert [why for _, why in result.kept] == [
        "CRDs are kept (deleting one deletes every object of its kind); use --prune-crds",
        "storage is kept without --prune-storage",
        "namespaces are kept without --prune-namespaces",
    ]


def test_a_namespace_holding_kept_claims_is_kept_too() -> None:
    cluster = FakeCluster()
    items = members(
        cluster, ours(obj("v1", "Namespace", "demo")), ours(obj("v1", "PersistentVolumeClaim", "d", "demo"))
    )
    options = RemoveOptions(
        namespaces=True, crds=True, wait_timeout=1, poll_interval=0.01, storage_flag="--delete-storage"
    )
    result = remove(cluster, items, applyset_id=OURS, reporter=EventLog(), options=options, verb="Deleted")
    assert [why for _, why in result.kept] == [
        "storage is kept without --delete-storage",
        "holds 1 PersistentVolumeClaim(s), kept without --delete-storage",
    ]


def test_delete_goes_webhooks_then_custom_resources_then_crds_then_workloads_rbac_namespaces() -> None:
    cluster = FakeCluster()
    crd = ours(
        obj(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "widgets.example.com",
            spec={"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}},
            status={"conditions": [{"type": "Established", "status": "True"}]},
        )
    )
    items = members(
        cluster,
        ours(obj("v1", "Namespace", "demo")),
        ours(obj("rbac.authorization.k8s.io/v1", "Role", "r", "demo")),
        ours(obj("apps/v1", "Deployment", "controller", "demo")),
        crd,
        ours(obj("example.com/v1", "Widget", "w", "demo")),
        ours(obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "widgets")),
    )
    options = RemoveOptions(namespaces=True, crds=True, storage=True, wait_timeout=1, poll_interval=0.01)
    result = remove(cluster, items, applyset_id=OURS, reporter=EventLog(), options=options, verb="Deleted")
    assert result.ok
    assert [key for method, key in cluster.writes if method == "DELETE"] == [
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io widgets",
        "Widget.example.com demo/w",
        "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com",
        "Deployment.apps demo/controller",
        "Role.rbac.authorization.k8s.io demo/r",
        "Namespace demo",
    ]


def test_an_object_held_by_a_finalizer_is_reported_by_name() -> None:
    cluster = FakeCluster()
    [held] = members(cluster, ours(obj("v1", "ConfigMap", "held", "demo")))
    cluster.objects[held.key]["metadata"]["finalizers"] = ["example.com/cleanup"]
    log = EventLog()
    result = remove(
        cluster,
        [held],
        applyset_id=OURS,
        reporter=log,
        options=RemoveOptions(wait_timeout=0.1, poll_interval=0.01),
        verb="Deleted",
    )
    assert result.stuck == [
        (ObjectKey("", "ConfigMap", "demo", "held"), "still present after 0.1s; finalizers: example.com/cleanup")
    ]
    assert [e.subject for e in log.of("Stuck")] == ["ConfigMap demo/held"]


def test_delete_releases_what_it_keeps_and_a_later_delete_of_the_same_install_still_finishes() -> None:
    cluster = FakeCluster()
    items = members(
        cluster, ours(obj("v1", "Namespace", "demo")), ours(obj("v1", "PersistentVolumeClaim", "d", "demo"))
    )
    keep = RemoveOptions(namespaces=True, crds=True, wait_timeout=1, poll_interval=0.01, release_kept=True)
    result = remove(cluster, items, applyset_id=OURS, reporter=EventLog(), options=keep, verb="Deleted")
    assert [k.kind for k, _ in result.kept] == ["PersistentVolumeClaim", "Namespace"]
    assert result.released == [k for k, _ in result.kept]
    for m in items:
        meta = cluster.live(m.key)["metadata"]
        assert not {labels.PART_OF, labels.APP_LABEL, labels.APPLICATION_LABEL} & set(meta.get("labels") or {})
        assert labels.HASH_ANNOTATION not in (meta.get("annotations") or {})
        assert meta["annotations"][labels.RELEASED_ANNOTATION] == OURS
        assert meta["uid"] == m.uid
    # `delete --delete-storage` later: the released objects are still this install's to remove.
    everything = RemoveOptions(
        namespaces=True, crds=True, storage=True, wait_timeout=1, poll_interval=0.01, release_kept=True
    )
    again = remove(cluster, items, applyset_id=OURS, reporter=EventLog(), options=everything, verb="Deleted")
    assert sorted(k.kind for k in again.removed) == ["Namespace", "PersistentVolumeClaim"]


def test_an_object_released_by_one_install_and_taken_by_another_is_left_to_that_one() -> None:
    cluster = FakeCluster()
    released = labels.released(ours(obj("v1", "Namespace", "demo")), OURS)
    released["metadata"]["labels"][labels.PART_OF] = "applyset-other-v1"
    (item,) = members(cluster, released)
    everything = RemoveOptions(namespaces=True, crds=True, storage=True, wait_timeout=1, poll_interval=0.01)
    result = remove(cluster, [item], applyset_id=OURS, reporter=EventLog(), options=everything, verb="Deleted")
    assert (result.removed, dict(result.skipped)) == ([], {item.key: "no longer carries our label; left alone"})
