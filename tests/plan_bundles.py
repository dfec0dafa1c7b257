"""Bundles the planner tests share (no tests here): an operator serving a webhook that admits its own custom
resources — the shape of KServe, whose runtimes wait for its controller — and the CRD of the cert-manager
it depends on."""

from __future__ import annotations

SERVING_BUNDLE = """
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
  metadata: {name: config, namespace: serving}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: leader, namespace: serving}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: leader, namespace: serving}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: controller, namespace: serving}
  spec:
    selector: {matchLabels: {app: controller}}
    template:
      metadata: {labels: {app: controller}}
      spec:
        serviceAccountName: controller
        containers:
        - name: manager
          image: example/controller:1
          envFrom: [{configMapRef: {name: config}}]
- apiVersion: v1
  kind: Service
  metadata: {name: webhook, namespace: serving}
  spec: {selector: {app: controller}, ports: [{port: 443}]}
- apiVersion: cert-manager.io/v1
  kind: Certificate
  metadata: {name: serving-cert, namespace: serving}
- apiVersion: admissionregistration.k8s.io/v1
  kind: ValidatingWebhookConfiguration
  metadata:
    name: serving-validator
    annotations: {cert-manager.io/inject-ca-from: serving/serving-cert}
  webhooks:
  - name: clusterservingruntime.serving.kserve.io
    clientConfig: {service: {name: webhook, namespace: serving, path: /validate}}
    rules:
    - {apiGroups: [serving.kserve.io], apiVersions: [v1alpha1], operations: [CREATE, UPDATE],
       resources: [clusterservingruntimes]}
  - name: ignored.serving.kserve.io
    failurePolicy: Ignore
    clientConfig: {service: {name: webhook, namespace: serving}}
    rules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
- apiVersion: serving.kserve.io/v1alpha1
  kind: ClusterServingRuntime
  metadata: {name: sklearn}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data, namespace: serving}
  spec: {storageClassName: fast}
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: fast}
  provisioner: example.com/fast
"""

CERT_MANAGER_BUNDLE = """
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: certificates.cert-manager.io}
  spec:
    group: cert-manager.io
    scope: Namespaced
    names: {kind: Certificate, plural: certificates}
"""
