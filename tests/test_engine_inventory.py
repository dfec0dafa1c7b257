"""The inventory as stored: one ApplySet parent ConfigMap while its members fit, shards past that (a ConfigMap
holds at most 1 MiB, about 6,800 members), and the single-ConfigMap form of earlier kfctl versions read and
upgraded."""

from __future__ import annotations

import json

import pytest
from fakecluster import FakeCluster

from kfctl.engine import inventory
from kfctl.engine.inventory import (
    DATA_KEY,
    ID_LABEL,
    SHARD_OF,
    SHARDS_KEY,
    Inventory,
    Member,
    parent_name,
)
from kfctl.errors import ClusterError
from kfctl.objects import ObjectKey

NAME = parent_name("demo")
MIB = 1024 * 1024


def members(n: int, *, start: int = 0) -> dict[ObjectKey, Member]:
    keys = [ObjectKey("", "ConfigMap", f"b{i % 50:02d}", f"c{i}") for i in range(start, start + n)]
    return {k: Member(k, "synthetic", uid=f"00000000-0000-0000-0000-{i:012d}") for i, k in enumerate(keys)}


def inv(n: int) -> Inventory:
    return Inventory(NAME, "kubeflow", "cluster-1", members(n))


def stored(cluster: FakeCluster) -> dict[str, dict[str, object]]:
    return {k.name: o for k, o in cluster.objects.items() if k.kind == "ConfigMap"}


# (id, members, shards expected) — the form depends on the members' size, not on a count.
FORM_CASES = [("small-stays-one-configmap", 100, 0), ("20000-members-in-shards", 20_000, 8)]


@pytest.mark.parametrize(("case", "n", "shards"), FORM_CASES, ids=[c[0] for c in FORM_CASES])
def test_members_fit_the_object_limit_and_read_back_exactly(case: str, n: int, shards: int) -> None:
    cluster = FakeCluster()
    assert inventory.write(cluster, inv(n), previous=None)
    objs = stored(cluster)
    parent = objs.pop(NAME)
    assert len(objs) == shards
    assert parent["metadata"]["labels"] == {ID_LABEL: inv(n).id}  # type: ignore[index]
    assert (DATA_KEY in parent["data"]) is (shards == 0)  # type: ignore[operator]
    for shard in objs.values():
        assert shard["metadata"]["labels"] == {SHARD_OF: inv(n).id}  # type: ignore[index]
        assert len(json.dumps(shard["data"])) < MIB
    if shards:
        assert json.loads(parent["data"][SHARDS_KEY]) == sorted(objs)  # type: ignore[index]
    back = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert back is not None and back.members == inv(n).members
    assert back.same_as(inv(n))
    assert not inventory.write(cluster, back, previous=back)  # unchanged: no request at all


def test_an_install_of_an_earlier_kfctl_is_read_and_upgraded_to_shards() -> None:
    cluster = FakeCluster()
    old = inv(3)
    cluster.put(  # exactly what kfctl wrote before shards existed
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": NAME,
                "namespace": "kubeflow",
                "labels": {ID_LABEL: old.id},
                "annotations": {"kfctl.kubeflow.org/cluster-id": "cluster-1"},
            },
            "data": {DATA_KEY: json.dumps([m.as_dict() for m in old.members.values()], indent=0)},
        }
    )
    read = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert read is not None and read.members == old.members and read.cluster_id == "cluster-1"
    grown = read.merged((k, "synthetic") for k in members(20_000, start=3))
    assert inventory.write(cluster, grown, previous=read)
    back = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert back is not None and len(back.members) == 20_003 and back.members == grown.members
    assert DATA_KEY not in stored(cluster)[NAME]["data"]  # type: ignore[operator]


def test_one_more_member_rewrites_one_shard_and_the_parent() -> None:
    cluster = FakeCluster()
    inventory.write(cluster, inv(20_000), previous=None)
    before = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert before is not None
    cluster.writes.clear()
    grown = before.merged([(ObjectKey("", "ConfigMap", "b00", "one-more"), "synthetic")])
    assert inventory.write(cluster, grown, previous=before)
    patched = [key for method, key in cluster.writes if method == "PATCH"]
    deleted = [key for method, key in cluster.writes if method == "DELETE"]
    assert len(patched) == 2 and patched[-1] == f"ConfigMap kubeflow/{NAME}"
    assert len(deleted) == 1  # the shard the new one replaces
    assert len(stored(cluster)) == 9


def test_a_shard_a_crashed_write_left_behind_goes_with_the_next_write() -> None:
    cluster = FakeCluster()
    inventory.write(cluster, inv(20_000), previous=None)
    orphan = f"{NAME}-0123456789ab"
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": orphan, "namespace": "kubeflow", "labels": {SHARD_OF: inv(1).id}},
            "data": {DATA_KEY: "[]"},
        }
    )
    before = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert before is not None and len(before.members) == 20_000  # the parent never named it
    inventory.write(cluster, inv(19_999), previous=before)
    assert orphan not in stored(cluster)


def test_shrinking_back_to_one_configmap_and_delete_remove_every_shard() -> None:
    cluster = FakeCluster()
    inventory.write(cluster, inv(20_000), previous=None)
    big = inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert big is not None
    inventory.write(cluster, inv(10), previous=big)
    assert list(stored(cluster)) == [NAME]
    inventory.write(cluster, inv(20_000), previous=inv(10))
    inventory.delete(cluster, inv(20_000))
    assert stored(cluster) == {}


def test_a_missing_shard_is_a_cluster_error_naming_it() -> None:
    cluster = FakeCluster()
    inventory.write(cluster, inv(20_000), previous=None)
    gone = sorted(n for n in stored(cluster) if n != NAME)[0]
    cluster.delete("v1", "ConfigMap", namespace="kubeflow", name=gone)
    with pytest.raises(ClusterError) as err:
        inventory.read(cluster, name=NAME, namespace="kubeflow")
    assert err.value.message == f"inventory kubeflow/{NAME}: its shard ConfigMap kubeflow/{gone} is missing"
    assert err.value.exit_code == 6
