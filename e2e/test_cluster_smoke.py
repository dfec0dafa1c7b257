"""Smoke tests of the e2e cluster itself: what kfctl's end-to-end tests rely on works for real.

Everything goes through the real API server with the official Python client. Waits poll with deadlines;
none of these is a timed test.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from harness import Cluster, poll
from kfctl_testbed import localcluster, pki, standin
from kubernetes import client

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # never pulled in the local cluster: kwok runs no containers
GPU_LABEL = "nvidia.com/gpu.present"


def meta(name: str, namespace: str | None = None, **kwargs: Any) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, namespace=namespace, **kwargs)


def pod_spec(**kwargs: Any) -> client.V1PodSpec:
    return client.V1PodSpec(containers=[client.V1Container(name="main", image=PAUSE_IMAGE)], **kwargs)


def condition(obj: Any, kind: str) -> str | None:
    for c in (obj.status.conditions or []) if obj.status else []:
        if c.type == kind:
            return str(c.status)
    return None


def is_ready(node: client.V1Node) -> bool:
    return condition(node, "Ready") == "True"


# --- the cluster ------------------------------------------------------------------------------------


def test_three_ready_nodes_one_with_a_gpu(k8s: Any) -> None:
    core = client.CoreV1Api(k8s)
    nodes = poll(
        lambda: (
            [n for n in core.list_node().items if is_ready(n)]
            if sum(is_ready(n) for n in core.list_node().items) >= 3
            else None
        ),
        timeout=60,
        what="3 Ready nodes",
    )
    assert len(nodes) == 3
    gpu = [n for n in nodes if (n.metadata.labels or {}).get(GPU_LABEL) == "true"]
    assert len(gpu) == 1, [n.metadata.name for n in gpu]
    assert int(gpu[0].status.capacity.get("nvidia.com/gpu", "0")) > 0


def test_version_matches_versions_file(k8s: Any, cluster: Cluster) -> None:
    if not cluster.ours:
        pytest.skip("the cluster came from $KUBECONFIG; its version is not ours to check")
    version = client.VersionApi(k8s).get_code()
    assert version.git_version == localcluster.read_versions()["KUBERNETES_VERSION"]


def test_deployment_becomes_available(k8s: Any, namespace: str) -> None:
    apps = client.AppsV1Api(k8s)
    labels = {"app": "smoke"}
    apps.create_namespaced_deployment(
        namespace,
        client.V1Deployment(
            metadata=meta("smoke", namespace),
            spec=client.V1DeploymentSpec(
                replicas=2,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(metadata=meta("", labels=labels), spec=pod_spec()),
            ),
        ),
    )

    def available() -> bool:
        d = apps.read_namespaced_deployment("smoke", namespace)
        return condition(d, "Available") == "True" and d.status.available_replicas == 2

    poll(available, timeout=60, what="Deployment smoke to become Available with 2 replicas")


def test_job_completes(k8s: Any, namespace: str) -> None:
    batch = client.BatchV1Api(k8s)
    batch.create_namespaced_job(
        namespace,
        client.V1Job(
            metadata=meta("smoke", namespace),
            spec=client.V1JobSpec(
                backoff_limit=0,
                template=client.V1PodTemplateSpec(spec=pod_spec(restart_policy="Never")),
            ),
        ),
    )
    poll(
        lambda: condition(batch.read_namespaced_job("smoke", namespace), "Complete") == "True",
        timeout=60,
        what="Job smoke to complete",
    )
    assert batch.read_namespaced_job("smoke", namespace).status.succeeded == 1


def test_pvcs_of_the_default_class_bind(k8s: Any, namespace: str) -> None:
    core = client.CoreV1Api(k8s)
    storage = client.StorageV1Api(k8s)
    defaults = [
        sc
        for sc in storage.list_storage_class().items
        if (sc.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true"
    ]
    assert [sc.metadata.name for sc in defaults] == ["standard"]

    sizes = {"data-small": "10Gi", "data-large": "20Gi"}
    for name, size in sizes.items():
        core.create_namespaced_persistent_volume_claim(
            namespace,
            client.V1PersistentVolumeClaim(
                metadata=meta(name, namespace),
                spec=client.V1PersistentVolumeClaimSpec(
                    access_modes=["ReadWriteOnce"],
                    resources=client.V1VolumeResourceRequirements(requests={"storage": size}),
                ),
            ),
        )
        # A consumer, so that a WaitForFirstConsumer class (kind's) binds too.
        core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=meta(f"use-{name}", namespace),
                spec=pod_spec(
                    volumes=[
                        client.V1Volume(
                            name="data",
                            persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(claim_name=name),
                        )
                    ],
                ),
            ),
        )
    for name, size in sizes.items():
        pvc = poll(
            lambda name=name: (
                (p := core.read_namespaced_persistent_volume_claim(name, namespace)).status.phase == "Bound" and p
            ),
            timeout=60,
            what=f"PVC {name} to bind",
        )
        assert pvc.spec.storage_class_name == "standard"
        assert pvc.status.capacity["storage"] == size


def test_crd_becomes_established_and_serves_custom_resources(k8s: Any) -> None:
    ext = client.ApiextensionsV1Api(k8s)
    custom = client.CustomObjectsApi(k8s)
    group, plural = f"g{uuid.uuid4().hex[:8]}.e2e.kfctl.test", "widgets"
    crd_name = f"{plural}.{group}"
    ext.create_custom_resource_definition(
        client.V1CustomResourceDefinition(
            metadata=meta(crd_name),
            spec=client.V1CustomResourceDefinitionSpec(
                group=group,
                scope="Namespaced",
                names=client.V1CustomResourceDefinitionNames(plural=plural, singular="widget", kind="Widget"),
                versions=[
                    client.V1CustomResourceDefinitionVersion(
                        name="v1",
                        served=True,
                        storage=True,
                        schema=client.V1CustomResourceValidation(
                            open_apiv3_schema=client.V1JSONSchemaProps(
                                type="object",
                                properties={
                                    "spec": client.V1JSONSchemaProps(
                                        type="object", properties={"size": client.V1JSONSchemaProps(type="integer")}
                                    )
                                },
                            )
                        ),
                    )
                ],
            ),
        )
    )
    try:
        poll(
            lambda: condition(ext.read_custom_resource_definition(crd_name), "Established") == "True",
            timeout=30,
            what=f"CRD {crd_name} to be Established",
        )
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
        # Established can precede the API server's discovery of the new group by a moment.
        poll(
            lambda: custom.create_namespaced_custom_object(group, "v1", "default", plural, body),
            timeout=15,
            what="creating a Widget",
        )
        got = custom.get_namespaced_custom_object(group, "v1", "default", plural, "w1")
        assert got["spec"] == {"size": 3}
        with pytest.raises(client.ApiException) as invalid:
            custom.create_namespaced_custom_object(
                group, "v1", "default", plural, {**body, "metadata": {"name": "w2"}, "spec": {"size": "big"}}
            )
        assert invalid.value.status == 422  # the schema is enforced by the real API server
    finally:
        ext.delete_custom_resource_definition(crd_name)


def test_deleting_a_namespace_with_objects_finishes(k8s: Any) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    name = f"e2e-doomed-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=meta(name)))
    core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=meta("cm", name), data={"a": "b"}))
    core.create_namespaced_secret(name, client.V1Secret(metadata=meta("s", name), string_data={"a": "b"}))
    core.create_namespaced_service(
        name,
        client.V1Service(
            metadata=meta("svc", name),
            spec=client.V1ServiceSpec(selector={"app": "x"}, ports=[client.V1ServicePort(port=80)]),
        ),
    )
    labels = {"app": "x"}
    apps.create_namespaced_deployment(
        name,
        client.V1Deployment(
            metadata=meta("d", name),
            spec=client.V1DeploymentSpec(
                replicas=2,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(metadata=meta("", labels=labels), spec=pod_spec()),
            ),
        ),
    )
    poll(lambda: len(core.list_namespaced_pod(name).items) == 2, timeout=60, what="the Deployment's 2 pods")

    core.delete_namespace(name)

    def gone() -> bool:
        try:
            core.read_namespace(name)
        except client.ApiException as e:
            return e.status == 404
        return False

    poll(gone, timeout=90, what=f"namespace {name} to be deleted")


def test_gpu_daemonset_runs_only_on_the_gpu_node(k8s: Any, namespace: str) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    labels = {"app": "gpu-only"}
    affinity = client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                node_selector_terms=[
                    client.V1NodeSelectorTerm(
                        match_expressions=[
                            client.V1NodeSelectorRequirement(key=GPU_LABEL, operator="In", values=["true"])
                        ]
                    )
                ]
            ),
        )
    )
    apps.create_namespaced_daemon_set(
        namespace,
        client.V1DaemonSet(
            metadata=meta("gpu-only", namespace),
            spec=client.V1DaemonSetSpec(
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=meta("", labels=labels),
                    spec=pod_spec(
                        affinity=affinity,
                        tolerations=[client.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
                    ),
                ),
            ),
        ),
    )

    def ready() -> bool:
        ds = apps.read_namespaced_daemon_set("gpu-only", namespace)
        s = ds.status
        return bool(s.desired_number_scheduled and s.number_ready == s.desired_number_scheduled)

    poll(ready, timeout=60, what="DaemonSet gpu-only to be ready")
    gpu_nodes = {n.metadata.name for n in core.list_node(label_selector=f"{GPU_LABEL}=true").items}
    pods = core.list_namespaced_pod(namespace, label_selector="app=gpu-only").items
    assert {p.spec.node_name for p in pods} == gpu_nodes
    assert len(pods) == len(gpu_nodes) == 1


# --- the stand-in controller ------------------------------------------------------------------------

CERT_MANAGER_CRDS = ("issuers.cert-manager.io", "clusterissuers.cert-manager.io", "certificates.cert-manager.io")


@pytest.fixture(scope="module")
def cert_manager_crds(k8s: Any, running_standin: None) -> Any:
    """cert-manager's CRDs from the repository's manifests (created if missing; removed again if we made
    them). The stand-in was running before they existed, which is part of what is tested."""
    ext = client.ApiextensionsV1Api(k8s)
    docs = {}
    for path in sorted((REPO / "manifests" / "cert-manager").glob("crd-*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                docs[doc["metadata"]["name"]] = doc
    missing = [n for n in CERT_MANAGER_CRDS if n not in docs]
    assert not missing, f"manifests/cert-manager lacks the CRDs {missing}"
    created = []
    for name in CERT_MANAGER_CRDS:
        try:
            ext.create_custom_resource_definition(docs[name])
            created.append(name)
        except client.ApiException as e:
            if e.status != 409:
                raise
    for name in CERT_MANAGER_CRDS:
        poll(
            lambda name=name: condition(ext.read_custom_resource_definition(name), "Established") == "True",
            timeout=30,
            what=f"CRD {name} to be Established",
        )
    yield
    for name in created:
        ext.delete_custom_resource_definition(name)


def cert_manager_object(custom: client.CustomObjectsApi, plural: str, namespace: str, body: dict[str, Any]) -> Any:
    # The new group can take a moment to appear in the API server's discovery after Established.
    return poll(
        lambda: custom.create_namespaced_custom_object("cert-manager.io", "v1", namespace, plural, body),
        timeout=15,
        what=f"creating a {body['kind']}",
    )


def ready_status(obj: dict[str, Any]) -> str | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return str(c.get("status"))
    return None


def test_certificate_becomes_ready_with_a_valid_certificate(k8s: Any, namespace: str, cert_manager_crds: None) -> None:
    custom, core = client.CustomObjectsApi(k8s), client.CoreV1Api(k8s)
    cert_manager_object(
        custom,
        "issuers",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": "selfsigned"},
            "spec": {"selfSigned": {}},
        },
    )
    dns_names = [f"webhook.{namespace}.svc", f"webhook.{namespace}.svc.cluster.local"]
    cert_manager_object(
        custom,
        "certificates",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "serving-cert"},
            "spec": {
                "secretName": "webhook-server-cert",
                "dnsNames": dns_names,
                "issuerRef": {"kind": "Issuer", "name": "selfsigned"},
            },
        },
    )

    poll(
        lambda: (
            ready_status(
                custom.get_namespaced_custom_object("cert-manager.io", "v1", namespace, "issuers", "selfsigned")
            )
            == "True"
        ),
        timeout=30,
        what="Issuer selfsigned to be Ready",
    )
    cert = poll(
        lambda: (
            (
                c := custom.get_namespaced_custom_object(
                    "cert-manager.io", "v1", namespace, "certificates", "serving-cert"
                )
            )
            and ready_status(c) == "True"
            and c
        ),
        timeout=30,
        what="Certificate serving-cert to be Ready",
    )
    assert cert["status"]["notAfter"]

    secret = core.read_namespaced_secret("webhook-server-cert", namespace)
    assert secret.type == "kubernetes.io/tls"
    data = {k: base64.b64decode(v) for k, v in secret.data.items()}
    assert {"tls.crt", "tls.key", "ca.crt"} <= set(data)
    leaf = pki.first_cert(data["tls.crt"])
    ca = pki.first_cert(data["ca.crt"])
    assert leaf is not None and ca is not None
    assert sorted(pki.dns_names_of(leaf)) == sorted(dns_names)
    # The key belongs to the certificate, and the CA bundle verifies its signature.
    key = serialization.load_pem_private_key(data["tls.key"], password=None)
    assert key.public_key().public_numbers() == leaf.public_key().public_numbers()  # type: ignore[union-attr]
    ca_key = ca.public_key()
    if isinstance(ca_key, rsa.RSAPublicKey):
        ca_key.verify(leaf.signature, leaf.tbs_certificate_bytes, padding.PKCS1v15(), leaf.signature_hash_algorithm)
    else:
        assert isinstance(ca_key, ec.EllipticCurvePublicKey)
        ca_key.verify(leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm))


def test_ca_is_injected_where_inject_ca_from_asks(k8s: Any, namespace: str, cert_manager_crds: None) -> None:
    custom, core = client.CustomObjectsApi(k8s), client.CoreV1Api(k8s)
    admission = client.AdmissionregistrationV1Api(k8s)
    cert_manager_object(
        custom,
        "issuers",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": "selfsigned"},
            "spec": {"selfSigned": {}},
        },
    )
    cert_manager_object(
        custom,
        "certificates",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "webhook-cert"},
            "spec": {
                "secretName": "webhook-cert",
                "dnsNames": [f"hook.{namespace}.svc"],
                "issuerRef": {"kind": "Issuer", "name": "selfsigned"},
            },
        },
    )
    name = f"{namespace}.e2e.kfctl.test"
    webhook = {
        "name": f"never-called.{namespace}.e2e.kfctl.test",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        # Matches nothing that exists, and Ignore: harmless on a cluster where webhooks are called.
        "failurePolicy": "Ignore",
        "rules": [
            {
                "apiGroups": ["e2e.kfctl.test"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["nothings"],
            }
        ],
        "clientConfig": {"service": {"name": "hook", "namespace": namespace, "path": "/validate"}},
    }
    admission.create_validating_webhook_configuration(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name, "annotations": {standin.INJECT_CA_FROM: f"{namespace}/webhook-cert"}},
            "webhooks": [webhook, {**webhook, "name": f"also-never-called.{namespace}.e2e.kfctl.test"}],
        }
    )
    try:
        secret = poll(
            lambda: core.read_namespaced_secret("webhook-cert", namespace), timeout=30, what="Secret webhook-cert"
        )
        ca = secret.data["ca.crt"]

        def injected() -> bool:
            hooks = admission.read_validating_webhook_configuration(name).webhooks
            return all(h.client_config.ca_bundle == ca for h in hooks)

        poll(injected, timeout=30, what="caBundle to be injected into both webhooks")
    finally:
        admission.delete_validating_webhook_configuration(name)


def test_ca_is_injected_into_a_crd_conversion_webhook(k8s: Any, namespace: str, cert_manager_crds: None) -> None:
    custom, core, ext = client.CustomObjectsApi(k8s), client.CoreV1Api(k8s), client.ApiextensionsV1Api(k8s)
    cert_manager_object(
        custom,
        "issuers",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": "selfsigned"},
            "spec": {"selfSigned": {}},
        },
    )
    cert_manager_object(
        custom,
        "certificates",
        namespace,
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "conversion-cert"},
            "spec": {
                "secretName": "conversion-cert",
                "dnsNames": [f"conversion.{namespace}.svc"],
                "issuerRef": {"kind": "Issuer", "name": "selfsigned"},
            },
        },
    )
    group = f"g{uuid.uuid4().hex[:8]}.e2e.kfctl.test"
    crd_name = f"gadgets.{group}"
    # One version only: the API server never has anything to convert, so it never dials the webhook.
    ext.create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name, "annotations": {standin.INJECT_CA_FROM: f"{namespace}/conversion-cert"}},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": {"service": {"name": "conversion", "namespace": namespace, "path": "/convert"}},
                    },
                },
            },
        }
    )
    try:
        secret = poll(
            lambda: core.read_namespaced_secret("conversion-cert", namespace), timeout=30, what="Secret conversion-cert"
        )
        poll(
            lambda: (
                ext.read_custom_resource_definition(crd_name).spec.conversion.webhook.client_config.ca_bundle
                == secret.data["ca.crt"]
            ),
            timeout=30,
            what="caBundle to be injected into the CRD's conversion webhook",
        )
    finally:
        ext.delete_custom_resource_definition(crd_name)


# --- last: nothing our processes did left the loopback interface -----------------------------------------


def test_no_connection_leaves_loopback(cluster: Cluster) -> None:
    if not cluster.ours:
        pytest.skip("the cluster came from $KUBECONFIG; its processes are not ours to inspect")
    state = localcluster.State.load(cluster.state_dir)  # type: ignore[arg-type]
    assert state is not None
    if state.backend != "local":
        pytest.skip("kind's processes run in containers")
    assert localcluster.non_loopback_sockets(state) == []


def test_dynamic_serving_ca_secret_appears_while_its_deployment_exists(kubeconfig: str, namespace: str) -> None:
    """cert-manager's webhook makes its own CA Secret; the stand-in does it for DYNAMIC_SERVING_CAS. Tested with
    an entry for this test's namespace, reconciled in-process, so the cluster's own stand-in is not involved."""
    from kfctl_testbed import kube_rest

    api = kube_rest.Client(kubeconfig)
    entry = standin.DynamicServingCA(namespace, "webhook", "webhook-ca")
    controller = standin.StandIn(api, dynamic_serving_cas=(entry,))
    secret_path = f"/api/v1/namespaces/{namespace}/secrets/webhook-ca"
    try:
        controller.dynamic_serving_ca_secrets()
        assert api.get(secret_path) is None, "no Deployment, no Secret"
        labels = {"app": "webhook"}
        api.create(
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "webhook"},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "main", "image": PAUSE_IMAGE}]},
                    },
                },
            },
        )
        controller.dynamic_serving_ca_secrets()
        secret = api.get(secret_path)
        assert secret is not None
        assert secret["metadata"]["annotations"][standin.ALLOW_DIRECT_INJECTION] == "true"
        ca = pki.first_cert(base64.b64decode(secret["data"]["ca.crt"]))
        assert ca is not None and ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        # Once it exists it is left alone: no rotation behind kfctl's back.
        controller.dynamic_serving_ca_secrets()
        assert api.get(secret_path)["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
    finally:
        api.close()
