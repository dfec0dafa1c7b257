"""Real admission-webhook calls: a webhook that nobody serves yet makes creation fail (failurePolicy Fail), and
creation succeeds once the test serves it on https://127.0.0.1:<port> (a `url` webhook: `controlplane` egress, which
the egress proxy passes straight through to loopback; Service webhooks go through it too, see test_egress.py)."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster, poll
from kfctl_testbed import localcluster, pki
from kfctl_testbed.kube_rest import JSON, ApiError, Client
from kfctl_testbed.standin_webhook import answer_review, read_review

pytestmark = pytest.mark.e2e


class AllowingWebhook(BaseHTTPRequestHandler):
    """Answers every AdmissionReview v1 with allowed: true and remembers what it was asked."""

    seen: list[dict[str, Any]]

    def do_POST(self) -> None:
        request = read_review(self)
        type(self).seen.append(request)
        answer_review(self, request["uid"], allowed=True)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_webhook_fails_until_served_then_allows(
    api: Client, cluster: Cluster, loopback_webhooks: None, tmp_path: Path
) -> None:
    webhook_configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    ca = pki.make_ca("e2e-webhook-test-ca")
    serving = pki.issue(common_name="127.0.0.1", ip_addresses=["127.0.0.1"], dns_names=["localhost"], ca=ca)
    port = free_port()
    suffix = uuid.uuid4().hex[:8]
    namespace, label = f"e2e-webhook-{suffix}", {"e2e.kfctl.test/webhook": suffix}
    api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": label}},
    )
    config_name = f"e2e-{suffix}.kfctl.test"
    api.create(
        webhook_configs,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": config_name},
            "webhooks": [
                {
                    "name": f"configmaps.{config_name}",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 5,
                    "namespaceSelector": {"matchLabels": label},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}/validate",
                        "caBundle": base64.b64encode(ca.cert_pem).decode(),
                    },
                }
            ],
        },
    )
    server: ThreadingHTTPServer | None = None
    try:
        attempts = iter(range(1_000_000))

        def create_configmap() -> JSON:
            return api.create(
                f"/api/v1/namespaces/{namespace}/configmaps",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{next(attempts)}"},
                    "data": {"k": "v"},
                },
            )

        def refused() -> str | None:
            # The API server picks up a new webhook configuration within a moment: until then creation works.
            try:
                create_configmap()
            except ApiError as e:
                return e.body
            return None

        error = poll(refused, timeout=30, what="creation to fail while nobody serves the webhook")
        assert f"configmaps.{config_name}" in error
        assert "failed calling webhook" in error

        AllowingWebhook.seen = []
        server = ThreadingHTTPServer(("127.0.0.1", port), AllowingWebhook)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
        (tmp_path / "tls.key").write_bytes(serving.key_pem)
        tls.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()

        created = create_configmap()
        # The webhook was asked about our ConfigMap. Not necessarily last: the controller manager's retry of the
        # namespace's kube-root-ca.crt, refused while nobody served, may come after it.
        assert created["metadata"]["name"] in [r["name"] for r in AllowingWebhook.seen if r["operation"] == "CREATE"]

        # The API server called the webhook at 127.0.0.1 and nothing else.
        state = localcluster.State.load(cluster.state_dir) if cluster.ours else None
        if state is not None:
            assert localcluster.non_loopback_sockets(state) == []
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        api.delete(f"{webhook_configs}/{config_name}")
        api.request("DELETE", f"/api/v1/namespaces/{namespace}")
