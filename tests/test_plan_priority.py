"""Which ready step starts first when the apply slots are taken: the one with the longest chain of waits.

On a first install a slow operator's ServiceAccount queued behind a couple of hundred objects nothing waits
for, and that queueing was added to the run (B2): the Deployment that needs it, the webhook it serves and what
that webhook admits all came after.
"""

from __future__ import annotations

import pytest
import yaml

from kfctl.plan.graph import build_plan, topological_order
from kfctl.plan.priority import heights

# An operator whose webhook admits a custom resource: ServiceAccount → Deployment (waits Available) → webhook
# backend (waits for an endpoint) → ClusterServingRuntime (waits for its CRD's status, none here).
BUNDLE = yaml.safe_load(
    """
- apiVersion: v1
  kind: Namespace
  metadata: {name: serving}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: clusterservingruntimes.serving.kserve.io}
  spec:
    group: serving.kserve.io
    scope: Cluster
    names: {kind: ClusterServingRuntime, plural: clusterservingruntimes}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: controller, namespace: serving}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: unrelated, namespace: serving}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: leader, namespace: serving}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: controller, namespace: serving}
  spec:
    selector: {matchLabels: {app: controller}}
    template:
      metadata: {labels: {app: controller}}
      spec:
        serviceAccountName: controller
        containers: [{name: manager, image: example/controller:1}]
- apiVersion: v1
  kind: Service
  metadata: {name: webhook, namespace: serving}
  spec: {selector: {app: controller}, ports: [{port: 443}]}
- apiVersion: admissionregistration.k8s.io/v1
  kind: ValidatingWebhookConfiguration
  metadata: {name: serving-validator}
  webhooks:
  - name: clusterservingruntime.serving.kserve.io
    clientConfig: {service: {name: webhook, namespace: serving, path: /validate}}
    rules:
    - apiGroups: [serving.kserve.io]
      apiVersions: [v1alpha1]
      operations: [CREATE]
      resources: [clusterservingruntimes]
- apiVersion: serving.kserve.io/v1alpha1
  kind: ClusterServingRuntime
  metadata: {name: sklearn}
"""
)

EXPECTED = [
    # step, its height (waits on the longest chain from it through its dependents, itself included), why
    ("ConfigMap serving/unrelated", 0, "nothing waits for it and it waits for nothing"),
    ("Role.rbac.authorization.k8s.io serving/leader", 0, "nothing waits for it and it waits for nothing"),
    ("ClusterServingRuntime.serving.kserve.io sklearn", 1, "the end of the chain: its own wait"),
    ("webhook backend serving/webhook", 2, "its wait for an endpoint, then the runtime's"),
    ("Deployment.apps serving/controller", 3, "its wait for Available, then the backend's and the runtime's"),
    ("ServiceAccount serving/controller", 3, "waits for nothing itself, but the Deployment's chain follows it"),
    ("Namespace serving", 4, "its own wait, then the longest chain in it"),
]


@pytest.mark.parametrize(("step", "height", "why"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_a_step_is_as_high_as_the_waits_on_its_longest_chain(step: str, height: int, why: str) -> None:
    plan = build_plan([("serving", BUNDLE)], depends_on={})
    order = topological_order(plan)
    assert heights(plan, order, plan.dependents())[step] == height, why
