"""Which ready step starts first when the apply slots are taken: the one with the longest chain of waits.

On a first install a slow operator's ServiceAccount queued behind a couple of hundred objects nothing waits
for, and that queueing was added to the run (B2): the Deployment that needs it, the webhook it serves and what
that webhook admits all came after.
"""

from __future__ import annotations

import pytest
import yaml
from plan_bundles import CERT_MANAGER_BUNDLE, SERVING_BUNDLE

from kfctl.plan.graph import build_plan, topological_order
from kfctl.plan.priority import heights

EXPECTED = [
    # step, its height (waits on the longest chain from it through its dependents, itself included), why
    ("Role.rbac.authorization.k8s.io serving/leader", 0, "nothing waits for it and it waits for nothing"),
    ("RoleBinding.rbac.authorization.k8s.io serving/leader", 0, "nothing waits for it and it waits for nothing"),
    ("ClusterServingRuntime.serving.kserve.io sklearn", 1, "the end of the chain: its own wait"),
    ("webhook backend serving/webhook", 2, "its wait for an endpoint, then the runtime's"),
    ("Deployment.apps serving/controller", 3, "its wait for Available, then the backend's and the runtime's"),
    ("ServiceAccount serving/controller", 3, "waits for nothing itself, but the Deployment's chain follows it"),
    ("ConfigMap serving/config", 3, "the Deployment reads it: the same chain follows it"),
    ("Namespace serving", 4, "its own wait, then the longest chain in it"),
    (
        "CustomResourceDefinition.apiextensions.k8s.io certificates.cert-manager.io",
        5,
        "serving depends on cert-manager, whose API this CRD is: all of serving's chain follows it",
    ),
]


@pytest.mark.parametrize(("step", "height", "why"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_a_step_is_as_high_as_the_waits_on_its_longest_chain(step: str, height: int, why: str) -> None:
    plan = build_plan(
        [("cert-manager", yaml.safe_load(CERT_MANAGER_BUNDLE)), ("serving", yaml.safe_load(SERVING_BUNDLE))],
        depends_on={"serving": ["cert-manager"]},
    )
    order = topological_order(plan)
    assert heights(plan, order, plan.dependents())[step] == height, why
