"""cert-manager's webhook, played by the stand-in controller (standin.py). TEST CODE.

cert-manager cannot be built here, yet the catalog registers its webhook with failurePolicy Fail for every
cert-manager.io object, and the local cluster calls admission webhooks. This server answers each AdmissionReview
v1 with `allowed: true` (no patch), on 127.0.0.1:<free port>, over TLS with a serving certificate for
`<service>.<namespace>.svc` signed by the CA the stand-in keeps in the webhook's CA Secret
(standin.DYNAMIC_SERVING_CAS), the CA the stand-in's cainjector puts into the webhook configurations' caBundle:
kube-apiserver verifies it as it would verify cert-manager's own. The egress proxy (egress.py) finds the
address on the stand-in's Lease (standin.WEBHOOK_ADDRESSES) and routes the webhook Service's cluster IP there
while the Service has a Running pod.

It validates nothing: an object cert-manager's webhook would deny is admitted. Until the CA Secret exists it has no
certificate for the name, and the TLS handshake fails (as it would before cert-manager's webhook is up).
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kfctl_testbed import pki

log = logging.getLogger("standin")

HANDSHAKE_SECONDS = 10.0


class WebhookServer(ThreadingHTTPServer):
    """Allow-all AdmissionReview v1 over TLS; the certificate is chosen by the client's SNI name."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Review)
        self.certificates: dict[str, tuple[bytes, ssl.SSLContext]] = {}  # server name → (its CA, its context)
        self.lock = threading.Lock()
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.sni_callback = self._choose
        self.thread = threading.Thread(target=self.serve_forever, name="cert-manager webhook", daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def serve_certificate(self, server_name: str, ca: pki.KeyPair) -> None:
        """Serve `server_name` with a certificate of `ca` (issued again only when the CA changes)."""
        with self.lock:
            current = self.certificates.get(server_name)
        if current is not None and current[0] == ca.cert_pem:
            return
        service, namespace = server_name.split(".")[:2]
        serving = pki.issue(
            common_name=server_name,
            dns_names=[service, f"{service}.{namespace}", server_name, f"{server_name}.cluster.local"],
            ca=ca,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # ssl loads a key pair from files only.
        with tempfile.TemporaryDirectory(prefix="standin-webhook-") as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(serving.cert_pem)
            key.write_bytes(serving.key_pem)
            context.load_cert_chain(cert, key)
        with self.lock:
            self.certificates[server_name] = (ca.cert_pem, context)
        log.info("webhook (stand-in): serving %s at %s", server_name, self.address)

    def forget(self, server_name: str) -> None:
        with self.lock:
            if self.certificates.pop(server_name, None) is not None:
                log.info("webhook (stand-in): no CA for %s any more", server_name)

    def _choose(self, sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext) -> int | None:
        with self.lock:
            entry = self.certificates.get(server_name or "")
        if entry is None:
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
        sock.context = entry[1]
        return None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        # The handshake happens on the request's own thread (_Review.setup), not in the accepting one.
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("webhook (stand-in): %s: %s", client_address, sys.exc_info()[1])


class _Review(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as kube-apiserver's webhook client expects

    def setup(self) -> None:
        self.request.settimeout(HANDSHAKE_SECONDS)
        self.request.do_handshake()
        self.request.settimeout(None)
        super().setup()

    def do_POST(self) -> None:
        request = read_review(self)
        kind = request.get("kind") or {}
        log.info(
            "webhook (stand-in): %s %s: allowed %s %s/%s %s",
            self.path,
            request.get("uid"),
            request.get("operation"),
            kind.get("group"),
            kind.get("kind"),
            "/".join(n for n in (request.get("namespace"), request.get("name")) if n),
        )
        answer_review(self, request.get("uid", ""), allowed=True)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def read_review(handler: BaseHTTPRequestHandler) -> dict[str, Any]:
    """The `request` of the AdmissionReview v1 POSTed to `handler`."""
    review = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", "0"))))
    return dict(review.get("request") or {})


def answer_review(handler: BaseHTTPRequestHandler, uid: str, *, allowed: bool, message: str = "") -> None:
    """Answer with an AdmissionReview v1 response; a denial carries `message` (kube-apiserver quotes it)."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 403, "message": message}
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
