"""Deleting a CRD deletes every object of its kind in every namespace, so delete and prune keep a CRD while
objects of its kind that kfctl did not apply exist (a user's notebooks, another app's experiments), and name
them. Our own custom resources go in an earlier phase and never keep it."""

from __future__ import annotations

from fakecluster import FakeCluster, established, obj

from kfctl.engine import labels
from kfctl.engine.events import EventLog
from kfctl.engine.inventory import Member
from kfctl.engine.remove import RemoveOptions, RemoveResult, remove
from kfctl.objects import Obj, ObjectKey, key_of

OURS = "applyset-ours-v1"
DELETE = RemoveOptions(namespaces=True, crds=True, wait_timeout=2.0, poll_interval=0.01)
CRD_KEY = ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "notebooks.kubeflow.org")


def ours(o: Obj) -> Obj:
    return labels.prepare(o, applyset_id=OURS, kfdef_name="demo", application="notebooks")


def crd() -> Obj:
    o = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "notebooks.kubeflow.org",
        spec={
            "group": "kubeflow.org",
            "scope": "Namespaced",
            "names": {"kind": "Notebook", "plural": "notebooks"},
            "versions": [
                {"name": "v1beta1", "served": True, "storage": False},
                {"name": "v1", "served": True, "storage": True},
            ],
        },
    )
    established(o)
    return o


def notebook(name: str, namespace: str) -> Obj:
    return obj("kubeflow.org/v1", "Notebook", name, namespace, spec={})


def setup(*others: Obj) -> tuple[FakeCluster, list[Member]]:
    cluster = FakeCluster()
    members = []
    for o in (ours(crd()), ours(notebook("ours", "kubeflow"))):
        stored = cluster.put(o)
        members.append(Member(key_of(stored), "notebooks", stored["metadata"]["uid"]))
    for o in others:
        cluster.put(o)
    return cluster, members


def run(cluster: FakeCluster, members: list[Member]) -> tuple[RemoveResult, EventLog]:
    log = EventLog()
    return remove(cluster, members, applyset_id=OURS, reporter=log, options=DELETE, verb="Deleted"), log


def test_a_crd_with_only_our_objects_is_deleted() -> None:
    cluster, members = setup()
    result, _ = run(cluster, members)
    assert sorted(result.removed) == sorted(m.key for m in members)
    assert cluster.live(CRD_KEY) is None


def test_a_crd_with_users_objects_is_kept_and_they_are_named() -> None:
    cluster, members = setup(notebook("alice", "team-a"), notebook("bob", "team-b"))
    result, log = run(cluster, members)
    why = (
        "2 object(s) of its kind that kfctl did not apply still exist: Notebook.kubeflow.org team-a/alice, "
        "Notebook.kubeflow.org team-b/bob; deleting the CRD would delete them in every namespace, so delete "
        "them first and re-run"
    )
    assert result.kept == [(CRD_KEY, why)]
    assert [e.message for e in log.of("Kept")] == [why]
    assert cluster.live(CRD_KEY) is not None
    assert cluster.live(ObjectKey("kubeflow.org", "Notebook", "team-a", "alice")) is not None
    assert cluster.live(ObjectKey("kubeflow.org", "Notebook", "kubeflow", "ours")) is None  # ours still went
