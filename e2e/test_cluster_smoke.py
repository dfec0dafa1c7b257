"""Smoke tests of the e2e cluster itself: what kfctl's end-to-end tests rely on works for real.

Everything goes through the real API server with the tests' client (kfctl_testbed.kube_rest, plain JSON).
Waits poll with deadlines; none of these is a timed test.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from harness import Cluster, poll
from kfctl_testbed import localcluster, pki, standin
from kfctl_testbed.kube_rest import JSON, ApiError, Client

from kfctl import yamlio

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # never pulled in the local cluster: kwok runs no containers
GPU_LABEL = "nvidia.com/gpu.present"
NODES = "/api/v1/nodes"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
VALIDATING_WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def core(namespace: str, plural: str) -> str:
    """The path of a core (v1) resource in a namespace."""
    return f"/api/v1/namespaces/{namespace}/{plural}"


def apps(namespace: str, plural: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/{plural}"


def obj(api_version: str, kind: str, name: str, **fields: Any) -> JSON:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


def pod_spec(**kwargs: Any) -> JSON:
    return {"containers": [{"name": "main", "image": PAUSE_IMAGE}], **kwargs}


def deployment(name: str, labels: dict[str, str], *, replicas: int) -> JSON:
    return obj(
        "apps/v1",
        "Deployment",
        name,
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec()},
        },
    )


def condition(o: JSON | None, kind: str) -> str | None:
    for c in ((o or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def is_ready(node: JSON) -> bool:
    return condition(node, "Ready") == "True"


# --- the cluster ------------------------------------------------------------------------------------


def test_three_ready_nodes_one_with_a_gpu(api: Client) -> None:
    def ready_nodes() -> list[JSON] | None:
        ready = [n for n in api.list(NODES) if is_ready(n)]
        return ready if len(ready) >= 3 else None

    nodes = poll(ready_nodes, timeout=60, what="3 Ready nodes")
    assert len(nodes) == 3
    gpu = [n for n in nodes if (n["metadata"].get("labels") or {}).get(GPU_LABEL) == "true"]
    assert len(gpu) == 1, [n["metadata"]["name"] for n in gpu]
    assert int(gpu[0]["status"]["capacity"].get("nvidia.com/gpu", "0")) > 0


def test_version_matches_versions_file(api: Client, cluster: Cluster) -> None:
    if not cluster.ours:
        pytest.skip("the cluster came from $KUBECONFIG; its version is not ours to check")
    version = api.request("GET", "/version")
    assert version["gitVersion"] == localcluster.read_versions()["KUBERNETES_VERSION"]


def test_deployment_becomes_available(api: Client, namespace: str) -> None:
    api.create(apps(namespace, "deployments"), deployment("smoke", {"app": "smoke"}, replicas=2))

    def available() -> bool:
        d = api.get(f"{apps(namespace, 'deployments')}/smoke")
        return condition(d, "Available") == "True" and (d or {})["status"].get("availableReplicas") == 2

    poll(available, timeout=60, what="Deployment smoke to become Available with 2 replicas")


def test_job_completes(api: Client, namespace: str) -> None:
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    api.create(
        jobs,
        obj(
            "batch/v1", "Job", "smoke", spec={"backoffLimit": 0, "template": {"spec": pod_spec(restartPolicy="Never")}}
        ),
    )
    poll(
        lambda: condition(api.get(f"{jobs}/smoke"), "Complete") == "True",
        timeout=60,
        what="Job smoke to complete",
    )
    job = api.get(f"{jobs}/smoke")
    assert job is not None and job["status"].get("succeeded") == 1


def test_pvcs_of_the_default_class_bind(api: Client, namespace: str) -> None:
    defaults = [
        sc
        for sc in api.list("/apis/storage.k8s.io/v1/storageclasses")
        if (sc["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"
    ]
    assert [sc["metadata"]["name"] for sc in defaults] == ["standard"]

    sizes = {"data-small": "10Gi", "data-large": "20Gi"}
    for name, size in sizes.items():
        api.create(
            core(namespace, "persistentvolumeclaims"),
            obj(
                "v1",
                "PersistentVolumeClaim",
                name,
                spec={"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
            ),
        )
        # A consumer, so that a WaitForFirstConsumer class (kind's) binds too.
        api.create(
            core(namespace, "pods"),
            obj(
                "v1",
                "Pod",
                f"use-{name}",
                spec=pod_spec(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": name}}]),
            ),
        )
    for name, size in sizes.items():
        pvc = poll(
            lambda name=name: (
                (p := api.get(f"{core(namespace, 'persistentvolumeclaims')}/{name}"))
                and p.get("status", {}).get("phase") == "Bound"
                and p
            ),
            timeout=60,
            what=f"PVC {name} to bind",
        )
        assert pvc["spec"]["storageClassName"] == "standard"
        assert pvc["status"]["capacity"]["storage"] == size


def test_crd_becomes_established_and_serves_custom_resources(api: Client) -> None:
    group, plural = f"g{uuid.uuid4().hex[:8]}.e2e.kfctl.test", "widgets"
    crd_name = f"{plural}.{group}"
    widgets = f"/apis/{group}/v1/namespaces/default/{plural}"
    api.create(
        CRDS,
        obj(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            crd_name,
            spec={
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                                },
                            }
                        },
                    }
                ],
            },
        ),
    )
    try:
        poll(
            lambda: condition(api.get(f"{CRDS}/{crd_name}"), "Established") == "True",
            timeout=30,
            what=f"CRD {crd_name} to be Established",
        )
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
        # Established can precede the API server's discovery of the new group by a moment.
        poll(lambda: api.create(widgets, body), timeout=15, what="creating a Widget")
        got = api.get(f"{widgets}/w1")
        assert got is not None and got["spec"] == {"size": 3}
        with pytest.raises(ApiError) as invalid:
            api.create(widgets, {**body, "metadata": {"name": "w2"}, "spec": {"size": "big"}})
        assert invalid.value.status == 422  # the schema is enforced by the real API server
    finally:
        api.delete(f"{CRDS}/{crd_name}")


def test_deleting_a_namespace_with_objects_finishes(api: Client) -> None:
    name = f"e2e-doomed-{uuid.uuid4().hex[:6]}"
    api.create("/api/v1/namespaces", obj("v1", "Namespace", name))
    api.create(core(name, "configmaps"), obj("v1", "ConfigMap", "cm", data={"a": "b"}))
    api.create(core(name, "secrets"), obj("v1", "Secret", "s", stringData={"a": "b"}))
    api.create(
        core(name, "services"), obj("v1", "Service", "svc", spec={"selector": {"app": "x"}, "ports": [{"port": 80}]})
    )
    api.create(apps(name, "deployments"), deployment("d", {"app": "x"}, replicas=2))
    poll(lambda: len(api.list(core(name, "pods"))) == 2, timeout=60, what="the Deployment's 2 pods")

    api.request("DELETE", f"/api/v1/namespaces/{name}")

    poll(lambda: api.get(f"/api/v1/namespaces/{name}") is None, timeout=90, what=f"namespace {name} to be deleted")


def test_gpu_daemonset_runs_only_on_the_gpu_node(api: Client, namespace: str) -> None:
    labels = {"app": "gpu-only"}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": GPU_LABEL, "operator": "In", "values": ["true"]}]},
                ]
            }
        }
    }
    api.create(
        apps(namespace, "daemonsets"),
        obj(
            "apps/v1",
            "DaemonSet",
            "gpu-only",
            spec={
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": pod_spec(
                        affinity=affinity,
                        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    ),
                },
            },
        ),
    )

    def ready() -> bool:
        s = (api.get(f"{apps(namespace, 'daemonsets')}/gpu-only") or {}).get("status") or {}
        return bool(s.get("desiredNumberScheduled") and s.get("numberReady") == s["desiredNumberScheduled"])

    poll(ready, timeout=60, what="DaemonSet gpu-only to be ready")
    gpu_nodes = {n["metadata"]["name"] for n in api.list(NODES, query={"labelSelector": f"{GPU_LABEL}=true"})}
    pods = api.list(core(namespace, "pods"), query={"labelSelector": "app=gpu-only"})
    assert {p["spec"].get("nodeName") for p in pods} == gpu_nodes
    assert len(pods) == len(gpu_nodes) == 1


# --- the stand-in controller ------------------------------------------------------------------------

CERT_MANAGER_CRDS = ("issuers.cert-manager.io", "clusterissuers.cert-manager.io", "certificates.cert-manager.io")


@pytest.fixture(scope="module")
def cert_manager_crds(api: Client, running_standin: None) -> Any:
    """cert-manager's CRDs from the repository's manifests (created if missing; removed again if we made
    them). The stand-in was running before they existed, which is part of what is tested."""
    docs = {}
    for path in sorted((REPO / "manifests" / "cert-manager").glob("crd-*.yaml")):
        for doc in yamlio.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                docs[doc["metadata"]["name"]] = doc
    missing = [n for n in CERT_MANAGER_CRDS if n not in docs]
    assert not missing, f"manifests/cert-manager lacks the CRDs {missing}"
    created = []
    for name in CERT_MANAGER_CRDS:
        try:
            api.create(CRDS, docs[name])
            created.append(name)
        except ApiError as e:
            if e.status != 409:
                raise
    for name in CERT_MANAGER_CRDS:
        poll(
            lambda name=name: condition(api.get(f"{CRDS}/{name}"), "Established") == "True",
            timeout=30,
            what=f"CRD {name} to be Established",
        )
    yield
    for name in created:
        api.delete(f"{CRDS}/{name}")


def cert_manager_path(namespace: str, plural: str) -> str:
    return f"/apis/cert-manager.io/v1/namespaces/{namespace}/{plural}"


def cert_manager_object(api: Client, plural: str, namespace: str, body: JSON) -> JSON:
    # The new group can take a moment to appear in the API server's discovery after Established.
    return poll(
        lambda: api.create(cert_manager_path(namespace, plural), body),
        timeout=15,
        what=f"creating a {body['kind']}",
    )


def test_certificate_becomes_ready_with_a_valid_certificate(
    api: Client, namespace: str, cert_manager_crds: None
) -> None:
    cert_manager_object(
        api,
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
        api,
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
        lambda: condition(api.get(f"{cert_manager_path(namespace, 'issuers')}/selfsigned"), "Ready") == "True",
        timeout=30,
        what="Issuer selfsigned to be Ready",
    )
    cert = poll(
        lambda: (
            (c := api.get(f"{cert_manager_path(namespace, 'certificates')}/serving-cert"))
            and condition(c, "Ready") == "True"
            and c
        ),
        timeout=30,
        what="Certificate serving-cert to be Ready",
    )
    assert cert["status"]["notAfter"]

    secret = api.get(f"{core(namespace, 'secrets')}/webhook-server-cert")
    assert secret is not None
    assert secret["type"] == "kubernetes.io/tls"
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
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


def test_ca_is_injected_where_inject_ca_from_asks(api: Client, namespace: str, cert_manager_crds: None) -> None:
    cert_manager_object(
        api,
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
        api,
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
    api.create(
        VALIDATING_WEBHOOKS,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name, "annotations": {standin.INJECT_CA_FROM: f"{namespace}/webhook-cert"}},
            "webhooks": [webhook, {**webhook, "name": f"also-never-called.{namespace}.e2e.kfctl.test"}],
        },
    )
    try:
        secret = poll(
            lambda: api.get(f"{core(namespace, 'secrets')}/webhook-cert"), timeout=30, what="Secret webhook-cert"
        )
        ca = secret["data"]["ca.crt"]

        def injected() -> bool:
            hooks = (api.get(f"{VALIDATING_WEBHOOKS}/{name}") or {})["webhooks"]
            return all(h["clientConfig"].get("caBundle") == ca for h in hooks)

        poll(injected, timeout=30, what="caBundle to be injected into both webhooks")
    finally:
        api.delete(f"{VALIDATING_WEBHOOKS}/{name}")


def test_ca_is_injected_into_a_crd_conversion_webhook(api: Client, namespace: str, cert_manager_crds: None) -> None:
    cert_manager_object(
        api,
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
        api,
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
    api.create(
        CRDS,
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
        },
    )
    try:
        secret = poll(
            lambda: api.get(f"{core(namespace, 'secrets')}/conversion-cert"), timeout=30, what="Secret conversion-cert"
        )
        poll(
            lambda: (
                (api.get(f"{CRDS}/{crd_name}") or {})["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle")
                == secret["data"]["ca.crt"]
            ),
            timeout=30,
            what="caBundle to be injected into the CRD's conversion webhook",
        )
    finally:
        api.delete(f"{CRDS}/{crd_name}")


# --- last: nothing our processes did left the loopback interface -----------------------------------------


def test_no_connection_leaves_loopback(cluster: Cluster) -> None:
    if not cluster.ours:
        pytest.skip("the cluster came from $KUBECONFIG; its processes are not ours to inspect")
    state = localcluster.State.load(cluster.state_dir)  # type: ignore[arg-type]
    assert state is not None
    if state.backend != "local":
        pytest.skip("kind's processes run in containers")
    assert localcluster.non_loopback_sockets(state) == []


def test_dynamic_serving_ca_secret_appears_while_its_deployment_exists(api: Client, namespace: str) -> None:
    """cert-manager's webhook makes its own CA Secret; the stand-in does it for DYNAMIC_SERVING_CAS. Tested with
    an entry for this test's namespace, reconciled in-process, so the cluster's own stand-in is not involved."""
    entry = standin.DynamicServingCA(namespace, "webhook", "webhook-ca")
    controller = standin.StandIn(api, dynamic_serving_cas=(entry,))
    secret_path = f"/api/v1/namespaces/{namespace}/secrets/webhook-ca"
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
