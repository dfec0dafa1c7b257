"""At most three CRDs on their way to Established at once; everything else keeps every apply slot.

On upstream's full platform the API server, given eight CRDs at once, took 5-6 s to establish the one KServe's
controller (and its 30 s probe delay) waited for; three at a time, the longest chains first, 3.3 s, and the
install went from 46.5-47.1 s to 43.1-43.3 s (kfctl.engine.crdgate).
"""

from __future__ import annotations

import dataclasses
import threading

from fakecluster import FakeCluster, obj
from test_engine_apply import FAST, run

from kfctl.engine.crdgate import CrdGate
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.plan.graph import Step, build_plan

ESTABLISHED = {"conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]}


def crd(plural: str) -> Obj:
    return obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        f"{plural}.example.com",
        spec={"group": "example.com", "scope": "Namespaced", "names": {"kind": plural.title(), "plural": plural}},
    )


def steps(*objects: Obj) -> dict[str, Step]:
    return build_plan([("app", list(objects))], depends_on={}).steps


def test_the_gate_admits_three_crds_sets_the_fourth_aside_and_gives_it_back_when_one_is_done() -> None:
    s = steps(*(crd(p) for p in ("as", "bs", "cs", "ds")), obj("v1", "ConfigMap", "c", "ns"))
    ids = [f"CustomResourceDefinition.apiextensions.k8s.io {p}.example.com" for p in ("as", "bs", "cs", "ds")]
    gate = CrdGate()
    for sid in ids[:3]:
        assert gate.admits(s[sid])
        gate.started(s[sid])
    assert not gate.admits(s[ids[3]]), "a fourth CRD waits"
    assert gate.deferred == [ids[3]]
    assert gate.admits(s["ConfigMap ns/c"]), "anything else is never held back"
    assert gate.admits(s[ids[0]]), "one in flight (retried after a transient error) starts again"
    assert gate.done("ConfigMap ns/c") == [], "what the gate never counted frees nothing"
    assert gate.done(ids[0]) == [ids[3]], "one done: the CRD set aside is looked at again"
    assert gate.deferred == []
    assert gate.admits(s[ids[3]])


def test_an_install_never_has_more_than_three_crds_short_of_established() -> None:
    """The fake API server establishes a CRD 50 ms after it is applied; the test records, at every CRD apply,
    how many applied CRDs were not Established yet."""
    cluster = FakeCluster()
    pending: set[ObjectKey] = set()
    seen: list[int] = []
    lock = threading.Lock()

    def establish_later(stored: Obj) -> None:
        key = key_of(stored)
        with lock:
            pending.add(key)
            seen.append(len(pending))

        def done() -> None:
            cluster.set_status(key, ESTABLISHED)
            with lock:
                pending.discard(key)

        threading.Timer(0.05, done).start()

    cluster.on_apply("CustomResourceDefinition", establish_later)
    crds = [crd(f"kind{i}s") for i in range(8)]
    maps = [obj("v1", "ConfigMap", f"c{i}", "default") for i in range(8)]
    result, log = run(cluster, [*crds, *maps], options=dataclasses.replace(FAST, concurrency=8))
    assert result.ok, result
    assert len(seen) == 8 and max(seen) == 3, seen
    healthy = [e.subject for e in log.events if e.type == "Healthy" and e.subject.startswith("CustomResource")]
    assert len(healthy) == 8
    created = [e.subject for e in log.events if e.type == "Created"]
    last_map = max(created.index(f"ConfigMap default/c{i}") for i in range(8))
    last_crd = max(created.index(c) for c in healthy)
    assert last_map < last_crd, "the ConfigMaps took the slots the gate left free, before the last CRD"
