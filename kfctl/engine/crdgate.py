"""At most a few CRDs on their way to Established at once, the longest chains first.

The API server does a CRD's work one after another: it stores the object (a large one: KServe's
InferenceService CRD is over a megabyte of schema), names it, establishes it and rebuilds its OpenAPI, all on the
same two cores as everything else. Given eight CRDs at once it takes longer over each, and the one a slow chain
waits for (KServe's controller, whose readiness probe then waits 30 s) is Established no sooner than the seven
it came with. Measured on upstream's full platform (100 CRDs, 655 objects, two cores): with every apply slot
open to CRDs, the InferenceService CRD took 5-6 s from created to Established and the install 46.5-47.1 s; with
three at a time, taken by the height of their chains (:mod:`kfctl.plan.priority`), 3.3 s and 43.1-43.3 s.

Other objects keep every slot: a CRD the gate holds back waits aside, and is looked at again when one of the
three in flight is done (ready, failed or blocked). An unchanged CRD is ready the moment its apply returns, so a
re-apply passes through the gate at the speed of its requests.
"""

from __future__ import annotations

from kfctl.plan.graph import Step, object_key

CRDS_AT_ONCE = 3


class CrdGate:
    """Which CRDs are in flight (applied or being applied, not yet done) and which wait for the gate."""

    def __init__(self, limit: int = CRDS_AT_ONCE) -> None:
        self.limit = limit
        self.in_flight: set[str] = set()
        self.deferred: list[str] = []

    @staticmethod
    def gates(step: Step) -> bool:
        key = object_key(step)
        return key is not None and (key.group, key.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition")

    def admits(self, step: Step) -> bool:
        """May ``step`` start now? A CRD over the limit is set aside (``deferred``) until one in flight is done."""
        if not self.gates(step) or step.id in self.in_flight or len(self.in_flight) < self.limit:
            return True
        self.deferred.append(step.id)
        return False

    def started(self, step: Step) -> None:
        if self.gates(step):
            self.in_flight.add(step.id)

    def done(self, sid: str) -> list[str]:
        """``sid`` reached its end: the CRDs set aside, to be looked at again (all of them: the queue takes the
        highest first and the gate sets the rest aside again)."""
        if sid not in self.in_flight:
            return []
        self.in_flight.discard(sid)
        out, self.deferred = self.deferred, []
        return out
