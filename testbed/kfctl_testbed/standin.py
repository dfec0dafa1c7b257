#!/usr/bin/env python3
"""Stand-in controller for kfctl's e2e clusters. TEST CODE: kfctl never imports it.

No container runs in the local control plane (kwok only pretends), so this process does, through the real
API server, what these controllers would do in a real cluster:

- cert-manager: Issuers and ClusterIssuers become Ready; each Certificate gets a real certificate for its
  spec.dnsNames in its spec.secretName Secret (tls.crt, tls.key, ca.crt; type kubernetes.io/tls) and
  becomes Ready.
- cert-manager's cainjector: `caBundle` is injected into Mutating/ValidatingWebhookConfigurations and
  CRD conversion webhooks annotated `cert-manager.io/inject-ca-from: <ns>/<certificate>` (or
  `cert-manager.io/inject-ca-from-secret: <ns>/<secret>`).
- webhook servers that keep their own serving CA in a Secret (table DYNAMIC_SERVING_CAS; cert-manager's
  webhook): while the server's Deployment exists, the Secret exists and holds a CA; and the server itself: an
  allow-all admission webhook with a certificate of that CA (standin_webhook.py), whose address the Lease
  carries (WEBHOOK_ADDRESSES) for the egress proxy (egress.py).
- webhook servers that make their own serving CA at start and write it into the caBundle of the webhook
  configurations naming their Service (table SELF_INJECTING_WEBHOOKS: istiod
  and net-istio's webhook), none of which can be built here: while the server's Deployment
  exists, the stand-in keeps a CA for it (in memory, as those servers keep theirs out of the install's objects),
  sets that caBundle, and answers its admission reviews allow-all with no patch (never a sidecar it cannot run).
- a volume provisioner for the StorageClasses in PROVISIONED_STORAGE_CLASSES: each pending claim gets a
  PersistentVolume bound to it, deleted again once the claim is gone; a pod the scheduler still holds back for
  its claims after they are all bound gets a wake-up (WAKE_AFTER_SECONDS).

It reads what it looks at from memory, kept current by watches as cert-manager's informers keep it
(READ_COLLECTIONS, informer.Cache). It passes over everything about once a second, and over Issuers and
Certificates at once when anything it reads changes: the chain Issuer → Certificate → the workload mounting its
Secret is on the critical path of a first install, and a poll per link added seconds real cert-manager does not.
It survives the cert-manager CRDs not being installed yet, and touches only the objects listed above. One
stand-in acts per cluster: it holds the Lease kube-system/kfctl-e2e-standin.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import datetime as dt
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kfctl_testbed import informer, kube_rest, pki, standin_webhook
from kfctl_testbed.kube_rest import JSON, ApiError

# --- what the stand-in acts on ----------------------------------------------------------------------
# Operators that rotate their own webhook certificates (the training operator) are not played: the process
# runtime (runtime.py) runs the real operator, whose rotator writes its Secret and caBundle.


@dataclass(frozen=True)
class DynamicServingCA:
    """A webhook server that creates its own CA Secret at start (cert-manager's --dynamic-serving-ca-secret-name),
    which cainjector then injects through `cert-manager.io/inject-ca-from-secret`. The stand-in also plays the
    server behind `service` (standin_webhook.py)."""

    namespace: str
    deployment: str  # the Secret is made only while this Deployment exists, as only a running server makes it
    secret_name: str
    service: str = ""  # the webhook's Service, when it is not named as the Deployment

    @property
    def server_name(self) -> str:
        return f"{self.service or self.deployment}.{self.namespace}.svc"


DYNAMIC_SERVING_CAS: tuple[DynamicServingCA, ...] = (
    DynamicServingCA("cert-manager", "cert-manager-webhook", "cert-manager-webhook-ca"),
)


@dataclass(frozen=True)
class SelfInjectingWebhook:
    """A webhook server that makes its own CA and writes its caBundle itself (no cert-manager annotation)."""

    namespace: str
    service: str
    deployment: str  # played only while this Deployment exists
    who: str  # for the log and the e2e output

    @property
    def server_name(self) -> str:
        return f"{self.service}.{self.namespace}.svc"


SELF_INJECTING_WEBHOOKS: tuple[SelfInjectingWebhook, ...] = (
    SelfInjectingWebhook("istio-system", "istiod", "istiod", "istiod (sidecar injector, config validation)"),
    SelfInjectingWebhook("knative-serving", "net-istio-webhook", "net-istio-webhook", "net-istio's webhook"),
)

# Claims of these classes get a PersistentVolume from the stand-in (the local cluster's default class).
PROVISIONED_STORAGE_CLASSES: tuple[str, ...] = ("standard",)

INJECT_CA_FROM = "cert-manager.io/inject-ca-from"
INJECT_CA_FROM_SECRET = "cert-manager.io/inject-ca-from-secret"  # noqa: S105 (an annotation name)
# cainjector injects from a Secret named by inject-ca-from-secret only when the Secret allows it.
ALLOW_DIRECT_INJECTION = "cert-manager.io/allow-direct-injection"
PROVISIONER = "kfctl-e2e-standin"  # recorded on the volumes it creates, so it deletes only its own
# kube-scheduler (1.33) can lose the wake-up of a pod whose claim binds while it is trying the pod. Its queue and its
# PV/PVC caches are fed by separate informer handlers (kubernetes/kubernetes#93552), and with SchedulerPopFromBackoffQ
# (beta, on since 1.33) each event of a binding (our volume's Add, then the binder's volume and claim updates, all
# within a millisecond) has the pod retried within microseconds, before those caches hold what the event announced:
# "unbound immediate PersistentVolumeClaims", "pvc(s) bound to non-existent pv(s)". After the last event the pod
# waits for the scheduler's 5-minute flush of unschedulable pods, which is kfctl's default --wait-timeout. Any
# PersistentVolume update requeues the pods the VolumeBinding plugin rejected, so when a pod is still held back for
# its claims this long after the stand-in saw all of them bound, it writes an annotation on the pod's volume (again
# after twice the wait, and so on up to WAKE_MAX_INTERVAL_SECONDS, while the pod stays held back).
WAKE_AFTER_SECONDS = 3.0
WAKE_MAX_INTERVAL_SECONDS = 60.0
SCHEDULER_WAKEUP = "kfctl-e2e-standin/scheduler-wakeup"
LEASE_NAMESPACE, LEASE_NAME = "kube-system", "kfctl-e2e-standin"
# On the Lease: {"<namespace>/<service>": "127.0.0.1:<port>"}, the webhook Services the acting stand-in serves.
WEBHOOK_ADDRESSES = "kfctl-e2e-standin/webhook-addresses"
LEASE_SECONDS = 15
LEASE_RENEW_SECONDS = 5.0  # a third of LEASE_SECONDS: two renewals can fail before another stand-in may take over
POLL_SECONDS = 1.0
# A change seen by a watch starts the cert-manager lane's next pass at once, but its passes start at most this
# often (a pass's own status writes wake it again).
MIN_PASS_GAP_SECONDS = 0.1

CERT_MANAGER = "/apis/cert-manager.io/v1"
WEBHOOK_CONFIGURATIONS = {
    "validating": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "mutating": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# Everything a pass reads, kept in memory (informer.Cache), as cert-manager's and the provisioner's informers keep
# it: a pass asks the API server nothing, and any change of these wakes the cert-manager lane at once. A pass may
# read an object older than its own last write; each write then fails on its resourceVersion (409) or as
# AlreadyExists, and the next pass sees the news.
READ_COLLECTIONS = (
    f"{CERT_MANAGER}/issuers",
    f"{CERT_MANAGER}/clusterissuers",
    f"{CERT_MANAGER}/certificates",
    "/api/v1/secrets",
    *WEBHOOK_CONFIGURATIONS.values(),
    CRDS,
    "/api/v1/persistentvolumes",
    "/api/v1/persistentvolumeclaims",
    "/apis/apps/v1/deployments",
)

log = logging.getLogger("standin")


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def timestamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(data: str | None) -> bytes:
    return base64.b64decode(data) if data else b""


def ready_condition(obj: JSON) -> JSON | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return None


def is_ready(obj: JSON) -> bool:
    condition = ready_condition(obj)
    return bool(
        condition
        and condition.get("status") == "True"
        and condition.get("observedGeneration", obj["metadata"].get("generation")) == obj["metadata"].get("generation")
    )


def namespaced_path(base: str, plural: str, namespace: str | None, name: str = "") -> str:
    path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return f"{path}/{name}" if name else path


# --- leadership ---------------------------------------------------------------------------------------


def lease_holder(api: kube_rest.Client) -> str | None:
    """Who holds the stand-in's lease now, or None when nobody does."""
    return live_holder(api.get(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"))


def live_holder(lease: JSON | None) -> str | None:
    """The lease's holder while it holds it (a holderIdentity, renewed within leaseDurationSeconds), else None."""
    spec = (lease or {}).get("spec") or {}
    renewed = spec.get("renewTime")
    if not renewed or not spec.get("holderIdentity"):
        return None
    try:
        renewed_at = dt.datetime.strptime(renewed[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None
    if now() - renewed_at > dt.timedelta(seconds=spec.get("leaseDurationSeconds", LEASE_SECONDS)):
        return None
    return str(spec["holderIdentity"])


def webhook_addresses(api: informer.Reader) -> dict[str, str]:
    """The webhook Services the acting stand-in serves, "<namespace>/<service>" → "127.0.0.1:<port>"; none while
    nobody holds the lease (a released or expired lease's annotation is stale: that stand-in serves nothing)."""
    lease = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}")
    if live_holder(lease) is None:
        return {}
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    try:
        addresses = json.loads(annotations.get(WEBHOOK_ADDRESSES) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in addresses.items()} if isinstance(addresses, dict) else {}


def hold_lease(api: kube_rest.Client, identity: str, *, annotations: dict[str, str] | None = None) -> bool:
    """Acquire or renew the lease (writing `annotations` on it); False while another live stand-in holds it."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
    renew = now().strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    lease = api.get(f"{path}/{LEASE_NAME}")
    spec = {"holderIdentity": identity, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": renew}
    try:
        if lease is None:
            api.create(
                path,
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE, "annotations": annotations or {}},
                    "spec": {**spec, "acquireTime": renew},
                },
            )
            return True
        holder = lease_holder(api)
        if holder not in (None, identity):
            return False
        if holder is None:
            spec["acquireTime"] = renew
        lease["spec"].update(spec)
        if annotations:
            lease["metadata"]["annotations"] = {**(lease["metadata"].get("annotations") or {}), **annotations}
        api.replace(f"{path}/{LEASE_NAME}", lease)  # resourceVersion in the body: a racing writer gets 409
        return True
    except ApiError as e:
        if e.status in (404, 409):
            return False
        raise


# --- the controller -----------------------------------------------------------------------------------


class StandIn:
    def __init__(
        self,
        api: kube_rest.Client,
        *,
        dynamic_serving_cas: tuple[DynamicServingCA, ...] = DYNAMIC_SERVING_CAS,
        self_injecting: tuple[SelfInjectingWebhook, ...] = SELF_INJECTING_WEBHOOKS,
        webhook_server: standin_webhook.WebhookServer | None = None,
        read: informer.Reader | None = None,
    ) -> None:
        self.api = api  # writes
        self.read = read or api  # reads: main() gives it a Cache of READ_COLLECTIONS
        self.dynamic_serving_cas = dynamic_serving_cas
        self.self_injecting = self_injecting
        self.own_cas: dict[SelfInjectingWebhook, pki.KeyPair] = {}  # the played servers' CAs, in memory
        self.webhook_server = webhook_server
        # Pods held back for claims that are all bound, by UID: (first seen, next wake-up, wait before it), monotonic.
        self.held_back: dict[str, tuple[float, float, float]] = {}

    def reconcile(self) -> None:
        """One pass over everything (``--once``)."""
        self.reconcile_cert_manager()
        self.reconcile_rest()

    def reconcile_cert_manager(self) -> None:
        """Issuers and Certificates: the lane a watched change wakes (see ``main``)."""
        self._run(self.issuers, self.certificates)

    def reconcile_rest(self) -> None:
        """Everything else, once a second: under a first install's load this pass takes seconds (the webhook
        configurations' and CRDs' CAs), which is why cert-manager's parts have a lane of their own."""
        self._run(
            self.dynamic_serving_ca_secrets,
            self.webhook_serving_certs,
            self.self_injecting_webhooks,
            self.inject_ca,
            self.volumes,
        )

    def _run(self, *parts: Callable[[], None]) -> None:
        """Each part, and each object in it, fails alone."""
        for part in parts:
            with self.guard(part.__name__):
                part()

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except ApiError as e:
            # Deleted or changed meanwhile, its namespace going away, or a new CRD's storage still starting
            # (429): the next pass sees the news.
            if e.status in (404, 409, 429) or (e.status == 403 and "being terminated" in e.body):
                log.debug("%s: %s", what, e)
            else:
                log.warning("%s: %s", what, e)
        except Exception:
            log.exception("%s failed", what)

    # cert-manager ----------------------------------------------------------------------------------

    def issuers(self) -> None:
        for plural in ("issuers", "clusterissuers"):
            for issuer in self.read.list(f"{CERT_MANAGER}/{plural}"):  # none before the CRDs exist
                if is_ready(issuer):
                    continue
                meta = issuer["metadata"]
                message = "Signing CA verified" if "ca" in issuer.get("spec", {}) else ""
                with self.guard(f"{plural[:-1]} {_ref(meta)}"):
                    self.set_ready(
                        namespaced_path(CERT_MANAGER, plural, meta.get("namespace"), meta["name"]),
                        issuer,
                        reason="IsReady",
                        message=message,
                    )
                    log.info("%s %s: Ready", plural[:-1], _ref(meta))

    def set_ready(self, path: str, obj: JSON, *, reason: str, message: str, extra: JSON | None = None) -> None:
        previous = ready_condition(obj) or {}
        transition = previous.get("lastTransitionTime") if previous.get("status") == "True" else None
        condition = {
            "type": "Ready",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition or timestamp(now()),
            "observedGeneration": obj["metadata"].get("generation", 1),
        }
        others = [c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") != "Ready"]
        patch = {"status": {**(extra or {}), "conditions": [*others, condition]}}
        try:
            self.api.merge_patch(f"{path}/status", patch)
        except ApiError as e:
            if e.status != 404:
                raise
            self.api.merge_patch(path, patch)  # a CRD without the status subresource

    def certificates(self) -> None:
        for cert in self.read.list(f"{CERT_MANAGER}/certificates"):
            with self.guard(f"certificate {_ref(cert['metadata'])}"):
                self.certificate(cert)

    def certificate(self, cert: JSON) -> None:
        meta, spec = cert["metadata"], cert.get("spec", {})
        namespace, secret_name = meta["namespace"], spec.get("secretName")
        if not secret_name:
            return
        issuer = self.issuer_of(cert)
        if issuer is None:
            return  # cert-manager waits for its issuer too
        secret_path = f"/api/v1/namespaces/{namespace}/secrets/{secret_name}"
        secret = copy.deepcopy(self.read.get(secret_path))  # changed below: not the cache's object
        if secret is not None and self.secret_matches(secret, cert):
            if not is_ready(cert):
                self.mark_certificate_ready(cert, pki.first_cert(unb64(secret["data"]["tls.crt"])))
            return

        dns_names = list(spec.get("dnsNames") or [])
        ip_addresses = list(spec.get("ipAddresses") or [])
        common_name = spec.get("commonName") or ""
        private_key = spec.get("privateKey") or {}
        key = pki.new_key(private_key.get("algorithm", "RSA"), private_key.get("size"))
        duration = _duration(spec.get("duration")) or dt.timedelta(days=90)
        signer = self.signing_ca(issuer)
        pair = pki.issue(
            common_name=common_name,
            dns_names=dns_names,
            ip_addresses=ip_addresses,
            ca=signer,
            is_ca=bool(spec.get("isCA")),
            server=True,
            client=True,
            duration=duration,
            key=key,
        )
        # cert-manager's SelfSigned issuer: the certificate is its own CA.
        ca_pem = signer.cert_pem if signer else pair.cert_pem
        issuer_ref = spec.get("issuerRef", {})
        template = spec.get("secretTemplate") or {}
        annotations = {
            **template.get("annotations", {}),
            "cert-manager.io/certificate-name": meta["name"],
            "cert-manager.io/issuer-name": issuer_ref.get("name", ""),
            "cert-manager.io/issuer-kind": issuer_ref.get("kind", "Issuer"),
            "cert-manager.io/issuer-group": issuer_ref.get("group", "cert-manager.io"),
            "cert-manager.io/alt-names": ",".join(dns_names),
            "cert-manager.io/ip-sans": ",".join(ip_addresses),
            "cert-manager.io/common-name": common_name,
        }
        data = {"tls.crt": b64(pair.cert_pem), "tls.key": b64(pair.key_pem), "ca.crt": b64(ca_pem)}
        if secret is None:
            self.api.create(
                f"/api/v1/namespaces/{namespace}/secrets",
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/tls",
                    "metadata": {
                        "name": secret_name,
                        "namespace": namespace,
                        "annotations": annotations,
                        "labels": {**template.get("labels", {}), "controller.cert-manager.io/fao": "true"},
                    },
                    "data": data,
                },
            )
        else:
            # A Secret's type is immutable: keep whatever type a pre-created Secret has.
            secret["data"] = {**(secret.get("data") or {}), **data}
            secret["metadata"]["annotations"] = {**(secret["metadata"].get("annotations") or {}), **annotations}
            labels = {**(secret["metadata"].get("labels") or {}), **template.get("labels", {})}
            secret["metadata"]["labels"] = labels
            self.api.replace(secret_path, secret)
        log.info("certificate %s: issued for %s into Secret %s", _ref(meta), dns_names or [common_name], secret_name)
        self.mark_certificate_ready(cert, pair.cert)

    def issuer_of(self, cert: JSON) -> JSON | None:
        ref = cert.get("spec", {}).get("issuerRef", {})
        if ref.get("group", "cert-manager.io") != "cert-manager.io" or not ref.get("name"):
            return None
        if ref.get("kind", "Issuer") == "ClusterIssuer":
            return self.read.get(f"{CERT_MANAGER}/clusterissuers/{ref['name']}")
        return self.read.get(f"{CERT_MANAGER}/namespaces/{cert['metadata']['namespace']}/issuers/{ref['name']}")

    def signing_ca(self, issuer: JSON) -> pki.KeyPair | None:
        """The CA key pair of a CA issuer, or None to self-sign (SelfSigned and every other issuer type)."""
        secret_name = (issuer.get("spec", {}).get("ca") or {}).get("secretName")
        if not secret_name:
            return None
        # A ClusterIssuer's secrets live in cert-manager's "cluster resource namespace".
        namespace = issuer["metadata"].get("namespace") or "cert-manager"
        secret = self.read.get(f"/api/v1/namespaces/{namespace}/secrets/{secret_name}")
        data = (secret or {}).get("data") or {}
        if "tls.crt" not in data or "tls.key" not in data:
            return None
        return pki.KeyPair(unb64(data["tls.crt"]), unb64(data["tls.key"]))

    @staticmethod
    def secret_matches(secret: JSON, cert: JSON) -> bool:
        data = secret.get("data") or {}
        annotations = secret["metadata"].get("annotations") or {}
        if annotations.get("cert-manager.io/certificate-name") != cert["metadata"]["name"]:
            return False
        if not data.get("tls.key") or not data.get("ca.crt"):
            return False
        current = pki.first_cert(unb64(data.get("tls.crt")))
        if current is None or current.not_valid_after_utc < now() + dt.timedelta(hours=1):
            return False
        wanted = set(cert.get("spec", {}).get("dnsNames") or [])
        return set(pki.dns_names_of(current)) == wanted

    def mark_certificate_ready(self, cert: JSON, issued: Any) -> None:
        meta = cert["metadata"]
        extra: JSON = {"revision": (cert.get("status") or {}).get("revision", 0) + 1}
        if issued is not None:
            not_before, not_after = issued.not_valid_before_utc, issued.not_valid_after_utc
            extra.update(
                {
                    "notBefore": timestamp(not_before),
                    "notAfter": timestamp(not_after),
                    "renewalTime": timestamp(not_after - (not_after - not_before) / 3),
                }
            )
        self.set_ready(
            namespaced_path(CERT_MANAGER, "certificates", meta["namespace"], meta["name"]),
            cert,
            reason="Ready",
            message="Certificate is up to date and has not expired",
            extra=extra,
        )
        log.info("certificate %s: Ready", _ref(meta))

    # cainjector ------------------------------------------------------------------------------------

    def inject_ca(self) -> None:
        for configuration, base in WEBHOOK_CONFIGURATIONS.items():
            for item in self.read.list(base):
                with self.guard(f"{configuration} webhook configuration {item['metadata']['name']}"):
                    bundle = self.ca_for(item["metadata"])
                    if bundle:
                        self.patch_webhook_ca(base, item, bundle, f"{configuration} webhook configuration")
        for crd in self.read.list(CRDS):
            meta = crd["metadata"]
            if not {INJECT_CA_FROM, INJECT_CA_FROM_SECRET} & set(meta.get("annotations") or {}):
                continue
            bundle = self.ca_for(meta)
            conversion = crd.get("spec", {}).get("conversion") or {}
            client_config = (conversion.get("webhook") or {}).get("clientConfig")
            if bundle is None or client_config is None or client_config.get("caBundle") == b64(bundle):
                continue
            self.api.json_patch(
                f"{CRDS}/{meta['name']}",
                [
                    {"op": "test", "path": "/metadata/resourceVersion", "value": crd["metadata"]["resourceVersion"]},
                    {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": b64(bundle)},
                ],
            )
            log.info("crd %s: injected caBundle", meta["name"])

    def ca_for(self, meta: JSON) -> bytes | None:
        """The CA that the object's inject-ca-from annotation points at, once it exists."""
        annotations = meta.get("annotations") or {}
        if INJECT_CA_FROM in annotations:
            namespace, _, name = annotations[INJECT_CA_FROM].partition("/")
            cert = self.read.get(f"{CERT_MANAGER}/namespaces/{namespace}/certificates/{name}")
            secret_name = (cert or {}).get("spec", {}).get("secretName")
            if not secret_name:
                return None
        elif INJECT_CA_FROM_SECRET in annotations:
            namespace, _, secret_name = annotations[INJECT_CA_FROM_SECRET].partition("/")
        else:
            return None
        secret = self.read.get(f"/api/v1/namespaces/{namespace}/secrets/{secret_name}")
        if secret is None:
            return None
        if (
            INJECT_CA_FROM_SECRET in annotations
            and (secret["metadata"].get("annotations") or {}).get(ALLOW_DIRECT_INJECTION) != "true"
        ):
            return None
        return unb64((secret.get("data") or {}).get("ca.crt")) or None

    def patch_webhook_ca(
        self, base: str, item: JSON, bundle: bytes, what: str, *, service: tuple[str, str] | None = None
    ) -> None:
        """Set ``bundle`` as the caBundle of the configuration's webhooks (only those calling ``service``
        (namespace, name) when given)."""
        encoded = b64(bundle)
        ops: list[JSON] = []
        for i, webhook in enumerate(item.get("webhooks") or []):
            client = webhook.get("clientConfig") or {}
            target = client.get("service") or {}
            if service is not None and (target.get("namespace"), target.get("name")) != service:
                continue
            current = client.get("caBundle")
            if current == encoded:
                continue
            # `test` guards each index against the list having changed since we read it.
            ops += [
                {"op": "test", "path": f"/webhooks/{i}/name", "value": webhook["name"]},
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": encoded},
            ]
        if ops:
            self.api.json_patch(f"{base}/{item['metadata']['name']}", ops)
            log.info("%s %s: caBundle set on %d webhook(s)", what, item["metadata"]["name"], len(ops) // 2)

    # webhook servers with a dynamic serving CA (cert-manager's) -----------------------------------------

    def dynamic_serving_ca_secrets(self) -> None:
        for entry in self.dynamic_serving_cas:
            deployment = self.read.get(f"/apis/apps/v1/namespaces/{entry.namespace}/deployments/{entry.deployment}")
            if deployment is None or deployment["metadata"].get("deletionTimestamp"):
                continue
            secrets = f"/api/v1/namespaces/{entry.namespace}/secrets"
            if self.read.get(f"{secrets}/{entry.secret_name}") is not None:
                continue
            ca = pki.make_ca(entry.secret_name)
            with self.guard(f"secret {entry.namespace}/{entry.secret_name}"):
                self.api.create(
                    secrets,
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "type": "kubernetes.io/tls",
                        "metadata": {
                            "name": entry.secret_name,
                            "namespace": entry.namespace,
                            "annotations": {ALLOW_DIRECT_INJECTION: "true"},
                        },
                        # cert-manager's dynamic serving layout: the CA is tls.crt/tls.key and ca.crt.
                        "data": {"ca.crt": b64(ca.cert_pem), "tls.crt": b64(ca.cert_pem), "tls.key": b64(ca.key_pem)},
                    },
                )
                log.info("secret %s/%s: created the webhook's serving CA", entry.namespace, entry.secret_name)

    def webhook_serving_certs(self) -> None:
        """The played webhook servers serve a certificate of their CA Secret while it exists."""
        if self.webhook_server is None:
            return
        for entry in self.dynamic_serving_cas:
            secret = self.read.get(f"/api/v1/namespaces/{entry.namespace}/secrets/{entry.secret_name}")
            data = (secret or {}).get("data") or {}
            if data.get("tls.crt") and data.get("tls.key"):
                ca = pki.KeyPair(unb64(data["tls.crt"]), unb64(data["tls.key"]))
                self.webhook_server.serve_certificate(entry.server_name, ca)
            else:
                self.webhook_server.forget(entry.server_name)

    # webhook servers that inject their own caBundle (istiod, Knative) ---------------

    def self_injecting_webhooks(self) -> None:
        played: list[SelfInjectingWebhook] = []
        for entry in self.self_injecting:
            path = f"/apis/apps/v1/namespaces/{entry.namespace}/deployments/{entry.deployment}"
            deployment = self.read.get(path)
            if deployment is None or deployment["metadata"].get("deletionTimestamp"):
                if self.own_cas.pop(entry, None) is not None and self.webhook_server is not None:
                    self.webhook_server.forget(entry.server_name)
                continue
            if entry not in self.own_cas:
                self.own_cas[entry] = pki.make_ca(f"{entry.service} stand-in CA")  # a CN holds 64 characters at most
                log.info("%s: played by the stand-in (allow-all, caBundle written as the server would)", entry.who)
            if self.webhook_server is not None:
                self.webhook_server.serve_certificate(entry.server_name, self.own_cas[entry])
            played.append(entry)
        if not played:
            return
        for configuration, base in WEBHOOK_CONFIGURATIONS.items():
            for item in self.read.list(base):  # once per pass, for every played server
                for entry in played:
                    with self.guard(f"{configuration} webhook configuration {item['metadata']['name']}"):
                        self.patch_webhook_ca(
                            base,
                            item,
                            self.own_cas[entry].cert_pem,
                            f"{configuration} webhook configuration",
                            service=(entry.namespace, entry.service),
                        )

    # volumes ---------------------------------------------------------------------------------------

    def volumes(self) -> None:
        volumes = {pv["metadata"]["name"]: pv for pv in self.read.list("/api/v1/persistentvolumes")}
        claims = self.read.list("/api/v1/persistentvolumeclaims")
        claim_uids = {c["metadata"]["uid"] for c in claims}
        for claim in claims:
            spec, meta = claim.get("spec", {}), claim["metadata"]
            if (
                claim.get("status", {}).get("phase") != "Pending"
                or spec.get("volumeName")
                or spec.get("storageClassName") not in PROVISIONED_STORAGE_CLASSES
                or meta.get("deletionTimestamp")
                or f"pvc-{meta['uid']}" in volumes
            ):
                continue
            with self.guard(f"persistentvolumeclaim {_ref(meta)}"):
                self.provision(claim)
        for name, pv in volumes.items():
            if not _provisioned_by_us(pv):
                continue
            claim_ref = pv.get("spec", {}).get("claimRef") or {}
            if pv.get("status", {}).get("phase") == "Released" or claim_ref.get("uid") not in claim_uids:
                if pv["metadata"].get("deletionTimestamp"):
                    continue
                # Give a just-created volume's claim time to show up in our next list.
                created = dt.datetime.strptime(pv["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
                if now() - created.replace(tzinfo=dt.timezone.utc) < dt.timedelta(seconds=10):
                    continue
                self.api.delete(f"/api/v1/persistentvolumes/{name}")
                log.info(
                    "persistentvolume %s: deleted (claim %s/%s is gone)",
                    name,
                    claim_ref.get("namespace"),
                    claim_ref.get("name"),
                )
        with self.guard("scheduler wake-ups"):
            self.wake_held_back_pods(claims, volumes)

    def wake_held_back_pods(self, claims: list[JSON], volumes: dict[str, JSON]) -> None:
        """Requeue pods the scheduler still rejects for their claims although every claim is bound to a volume that
        exists, by touching the volume (see WAKE_AFTER_SECONDS)."""
        bound = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): c["spec"]["volumeName"]
            for c in claims
            if c.get("status", {}).get("phase") == "Bound" and c.get("spec", {}).get("volumeName") in volumes
        }
        held_back: dict[str, tuple[float, float, float]] = {}
        pending = (
            self.read.list("/api/v1/pods", query={"fieldSelector": "spec.nodeName=,status.phase=Pending"})
            if bound
            else []
        )
        clock = time.monotonic()
        touched: set[str] = set()
        for pod in pending:
            meta = pod["metadata"]
            names = _claim_names(pod)
            pvs = [bound.get((meta["namespace"], name)) for name in names]
            ours = sorted({pv for pv in pvs if pv and _provisioned_by_us(volumes[pv])})
            if meta.get("deletionTimestamp") or not names or None in pvs or not ours or not _held_back_for_volumes(pod):
                continue
            since, due, wait = self.held_back.get(meta["uid"], (clock, clock + WAKE_AFTER_SECONDS, WAKE_AFTER_SECONDS))
            if clock >= due:
                for pv in ours:
                    if pv in touched:
                        continue
                    touched.add(pv)
                    # A new value each time: a patch that changes nothing makes no event.
                    stamp = dt.datetime.now(dt.timezone.utc).isoformat()
                    with self.guard(f"persistentvolume {pv}"):
                        self.api.merge_patch(
                            f"/api/v1/persistentvolumes/{pv}", {"metadata": {"annotations": {SCHEDULER_WAKEUP: stamp}}}
                        )
                log.info(
                    "pod %s: held back for its claims %.0f s after they were bound; woke the scheduler through %s",
                    _ref(meta),
                    clock - since,
                    ", ".join(ours),
                )
                wait = min(wait * 2, WAKE_MAX_INTERVAL_SECONDS)
                due = clock + wait
            held_back[meta["uid"]] = (since, due, wait)
        self.held_back = held_back

    def provision(self, claim: JSON) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        name = f"pvc-{meta['uid']}"
        size = spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")
        self.api.create(
            "/api/v1/persistentvolumes",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "storageClassName": spec["storageClassName"],
                    # Released volumes are deleted by us (volumes()); the controller manager leaves them alone.
                    "persistentVolumeReclaimPolicy": "Delete",
                    # Pre-bound: the controller manager's binder completes the binding.
                    "claimRef": {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "namespace": meta["namespace"],
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                    # Never mounted: kwok runs no containers.
                    "hostPath": {"path": f"/tmp/kfctl-e2e-volumes/{name}", "type": ""},  # noqa: S108 (never mounted)
                },
            },
        )
        log.info("persistentvolumeclaim %s: created volume %s (%s)", _ref(meta), name, size)


def _claim_names(pod: JSON) -> list[str]:
    """The claims a pod uses, generic ephemeral volumes' included (named <pod>-<volume>)."""
    names: list[str] = []
    for volume in pod.get("spec", {}).get("volumes") or []:
        if volume.get("persistentVolumeClaim"):
            names.append(volume["persistentVolumeClaim"]["claimName"])
        elif volume.get("ephemeral"):
            names.append(f"{pod['metadata']['name']}-{volume['name']}")
    return names


def _held_back_for_volumes(pod: JSON) -> bool:
    """Whether the scheduler's last word on the pod was about its claims or volumes."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = (condition.get("message") or "").lower()
            return condition.get("reason") == "Unschedulable" and any(
                word in message for word in ("persistentvolumeclaim", "pvc(s)", "pv(s)")
            )
    return False


def _provisioned_by_us(pv: JSON) -> bool:
    return (pv["metadata"].get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER


def _ref(meta: JSON) -> str:
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _duration(value: str | None) -> dt.timedelta | None:
    """cert-manager durations are Go durations such as 2160h0m0s or 8760h."""
    if not value:
        return None
    total, number = 0.0, ""
    units = {"h": 3600, "m": 60, "s": 1}
    for ch in value:
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            return None
    return dt.timedelta(seconds=total) if total else None


def cert_manager_lane(controller: StandIn, changed: threading.Event, acting: threading.Event) -> None:
    """Issuers and Certificates, at once when something the stand-in reads changes (``changed``) and at least once
    a second, beside the main loop's slower pass (a thread: the real cert-manager reacts to its informers within
    milliseconds)."""
    while True:
        changed.wait(POLL_SECONDS)
        changed.clear()  # the pass sees every change made so far
        if acting.is_set():
            controller.reconcile_cert_manager()
        time.sleep(MIN_PASS_GAP_SECONDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="kfctl e2e stand-in controller (test code)")
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), required="KUBECONFIG" not in os.environ)
    parser.add_argument("--once", action="store_true", help="one reconcile pass, then exit (for debugging)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stdout,
    )

    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    api = kube_rest.Client(args.kubeconfig, timeout=15)
    webhook_server = standin_webhook.WebhookServer()
    webhook_server.start()
    controller = StandIn(api, webhook_server=webhook_server)  # --once reads the API server
    served = {f"{e.namespace}/{e.service or e.deployment}": webhook_server.address for e in DYNAMIC_SERVING_CAS}
    served |= {f"{e.namespace}/{e.service}": webhook_server.address for e in SELF_INJECTING_WEBHOOKS}
    identity = f"{socket.gethostname()}-{os.getpid()}"
    log.info("stand-in %s started against %s; plays %s", identity, args.kubeconfig, served)
    lease_annotations = {WEBHOOK_ADDRESSES: json.dumps(served, sort_keys=True)}
    if args.once:
        leading = hold_lease(api, identity, annotations=lease_annotations)
        if leading:
            controller.reconcile()
    else:
        leading = False
        acting = threading.Event()  # set while this stand-in holds the lease: the cert-manager lane acts only then
        cache = informer.Cache(kube_rest.Client(args.kubeconfig, timeout=60), READ_COLLECTIONS).start()
        controller.read = cache
        cert_manager = StandIn(kube_rest.Client(args.kubeconfig, timeout=15), read=cache)  # a connection of its own
        lane = threading.Thread(
            target=cert_manager_lane, args=(cert_manager, cache.changed, acting), name="cert-manager"
        )
        lane.daemon = True
        lane.start()
        holding, renew_at = False, 0.0
        while not stopping:
            started = time.monotonic()
            if started >= renew_at:
                try:
                    holding = hold_lease(api, identity, annotations=lease_annotations)
                    renew_at = started + LEASE_RENEW_SECONDS if holding else started  # a waiting one asks each tick
                except Exception as e:  # the API server may be restarting: try again next tick
                    log.warning("lease: %s", e)
                    holding = False
            if holding != leading:
                log.info("stand-in %s: %s", identity, "acting" if holding else "another stand-in is acting; waiting")
                leading = holding
            if holding:
                acting.set()
                controller.reconcile_rest()
            else:
                acting.clear()
            time.sleep(max(0.05, POLL_SECONDS - (time.monotonic() - started)))
        acting.clear()
    if leading:
        # Hand over at once instead of making the next stand-in wait for the lease to expire.
        try:
            path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"
            lease = api.get(path)
            if lease and lease.get("spec", {}).get("holderIdentity") == identity:
                lease["spec"]["holderIdentity"] = ""
                # Its webhook stops with it: no address may outlive the stand-in that serves it.
                (lease["metadata"].get("annotations") or {}).pop(WEBHOOK_ADDRESSES, None)
                api.replace(path, lease)
        except Exception as e:
            log.warning("releasing the lease: %s", e)
    api.close()
    webhook_server.stop()
    log.info("stand-in %s stopped", identity)
    return 0


if __name__ == "__main__":
    sys.exit(main())
