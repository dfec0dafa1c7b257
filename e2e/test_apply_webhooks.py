"""kfctl apply against an API server that really calls admission webhooks (served by this test on 127.0.0.1).

A webhook whose server comes up late makes creation fail with "failed calling webhook": kfctl retries
until it answers. A webhook that denies is final: kfctl stops at once and quotes the denial.
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, write_local_kfdef
from harness import poll
from kfctl_testbed import pki
from kfctl_testbed.standin_webhook import answer_review, read_review

pytestmark = pytest.mark.e2e

LATE_SECONDS = 10.0


def handler(*, allow: bool, message: str = "") -> type[BaseHTTPRequestHandler]:
    class Webhook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            answer_review(self, read_review(self)["uid"], allowed=allow, message=message)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Webhook


class Server:
    """An HTTPS webhook server on 127.0.0.1, started now or later."""

    def __init__(self, tmp: Path, *, allow: bool, message: str = "") -> None:
        self.ca = pki.make_ca("e2e-apply-webhook-ca")
        serving = pki.issue(common_name="127.0.0.1", ip_addresses=["127.0.0.1"], ca=self.ca)
        (tmp / "tls.crt").write_bytes(serving.cert_pem)
        (tmp / "tls.key").write_bytes(serving.key_pem)
        self.tmp = tmp
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.handler = handler(allow=allow, message=message)
        self.httpd: ThreadingHTTPServer | None = None
        self.started_at: float | None = None

    def start(self) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(self.tmp / "tls.crt", self.tmp / "tls.key")
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.httpd = httpd
        self.started_at = time.time()

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    @property
    def client_config(self) -> dict[str, str]:
        return {
            "url": f"https://127.0.0.1:{self.port}/validate",
            "caBundle": base64.b64encode(self.ca.cert_pem).decode(),
        }


def webhook_configuration(name: str, *, client_config: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    """A failurePolicy Fail ValidatingWebhookConfiguration for ConfigMaps carrying the `selector` labels."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"configmaps.{name}",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 5,
                "objectSelector": {"matchLabels": selector},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["configmaps"],
                    }
                ],
                "clientConfig": client_config,
            }
        ],
    }


def register_and_wait_active(kubeconfig: str, config: dict[str, Any], selector: dict[str, str], ns: str) -> None:
    """Create the configuration and wait until the API server enforces it (a labelled probe is refused)."""
    subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "-"],
        input=json.dumps(config),
        text=True,
        capture_output=True,
        check=True,
        timeout=60,
    )
    label = ",".join(f"{k}={v}" for k, v in selector.items())
    probes = itertools.count()

    def refused() -> bool:
        probe = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"probe-{next(probes)}", "namespace": ns, "labels": selector},
        }
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, "create", "-f", "-"],
            input=json.dumps(probe),
            text=True,
            capture_output=True,
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            return True
        kubectl(kubeconfig, "delete", "configmap", "-n", ns, "-l", label, check=False)
        return False

    poll(refused, timeout=30, what="the webhook configuration to take effect (a labelled probe refused)", interval=0.5)


@pytest.fixture
def scene(kubeconfig: str, loopback_webhooks: None) -> Iterator[tuple[str, str, dict[str, str]]]:
    suffix = uuid.uuid4().hex[:8]
    ns = f"e2e-hooks-{suffix}"
    kubectl(kubeconfig, "create", "namespace", ns)
    # Not the bare hex suffix as the label value: "112818e2" is a string to PyYAML but a number to kustomize.
    yield suffix, ns, {"e2e.kfctl.dev/webhook": f"s-{suffix}"}
    kubectl(kubeconfig, "delete", "namespace", ns, "--wait=false", check=False)


def test_a_webhook_whose_server_starts_late_is_waited_for(
    tmp_path: Path, kubeconfig: str, scene: tuple[str, str, dict[str, str]]
) -> None:
    suffix, ns, selector = scene
    server = Server(tmp_path, allow=True)
    config = webhook_configuration(f"late-{suffix}.kfctl.test", client_config=server.client_config, selector=selector)
    register_and_wait_active(kubeconfig, config, selector, ns)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "guarded", "namespace": ns, "labels": selector},
        "data": {"a": "b"},
    }
    app = tmp_path / "app"
    write_local_kfdef(app, name=f"late-{suffix}", namespace=ns, apps={"guarded": [config, cm]})
    timer = threading.Timer(LATE_SECONDS, server.start)
    timer.start()
    try:
        # --adopt: the test registered the configuration itself (with kubectl) so that it is in force before
        # kfctl starts; without it kfctl rightly refuses to take over an object it did not create.
        run = kfctl("apply", str(app), "--adopt", "--wait-timeout", "60s", kubeconfig=kubeconfig, timeout=180)
        assert run.code == 0, run.explain()
        retries = [e for e in run.events if e["event"] == "Retrying" and e["subject"] == f"ConfigMap {ns}/guarded"]
        assert retries and "failed calling webhook" in retries[0]["message"], run.explain()
        assert server.started_at is not None
        assert run.first("Created", f"ConfigMap {ns}/guarded") >= server.started_at
        print(f"\nFIGURES late webhook: apply exit 0 in {run.seconds:.1f}s, {len(retries)} distinct retry message(s)")
    finally:
        timer.cancel()
        server.stop()
        kubectl(kubeconfig, "delete", "validatingwebhookconfiguration", config["metadata"]["name"], check=False)


def test_a_denying_webhook_fails_fast_and_is_quoted(
    tmp_path: Path, kubeconfig: str, scene: tuple[str, str, dict[str, str]]
) -> None:
    suffix, ns, selector = scene
    server = Server(tmp_path, allow=False, message="e2e: this ConfigMap is not welcome")
    server.start()
    name = f"deny-{suffix}.kfctl.test"
    config = webhook_configuration(name, client_config=server.client_config, selector=selector)
    register_and_wait_active(kubeconfig, config, selector, ns)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "unwelcome", "namespace": ns, "labels": selector},
        "data": {"a": "b"},
    }
    app = tmp_path / "app"
    write_local_kfdef(app, name=f"deny-{suffix}", namespace=ns, apps={"guarded": [config, cm]})
    try:
        # --adopt: the test registered the configuration itself (with kubectl) so that it is in force before
        # kfctl starts; without it kfctl rightly refuses to take over an object it did not create.
        run = kfctl("apply", str(app), "--adopt", "--wait-timeout", "60s", kubeconfig=kubeconfig, timeout=180)
        assert run.code == 7, run.explain()
        assert run.seconds < 20, run.explain()
        quoted = f'admission webhook "configmaps.{name}" denied the request: e2e: this ConfigMap is not welcome'
        assert any(quoted in d for d in run.error["details"]), run.explain()
        assert not [e for e in run.events if e["event"] == "Retrying"]
        print(f"\nFIGURES denial: exit 7 after {run.seconds:.1f}s: {run.error['details'][0]}")
    finally:
        server.stop()
        kubectl(kubeconfig, "delete", "validatingwebhookconfiguration", name, check=False)
