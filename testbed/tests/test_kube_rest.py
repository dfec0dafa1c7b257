"""kfctl_testbed.kube_rest against a tiny HTTPS server on 127.0.0.1: what it sends, and how it answers."""

from __future__ import annotations

import base64
import json
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kfctl_testbed import kube_rest, pki

TOKEN = "t0ken"
NOT_FOUND = {"kind": "Status", "status": "Failure", "reason": "NotFound", "message": 'pods "p" not found', "code": 404}


@dataclass
class Seen:
    method: str
    path: str  # with the query
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    url: str
    seen: list[Seen] = field(default_factory=list)
    # path (without query) -> (status, body); a dict body is sent as JSON, a str as text
    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)


class Handler(BaseHTTPRequestHandler):
    server_state: Server

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        state = type(self).server_state
        state.seen.append(Seen(self.command, self.path, dict(self.headers), json.loads(raw) if raw else None))
        status, body = state.answers.get(self.path.split("?")[0], (404, NOT_FOUND))
        data = (json.dumps(body) if isinstance(body, dict | list) else str(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if isinstance(body, dict | list) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[pki.KeyPair, Path, Path]:
    ca = pki.make_ca("kube-rest-test-ca")
    serving = pki.issue(common_name="127.0.0.1", ip_addresses=["127.0.0.1"], ca=ca)
    d = tmp_path_factory.mktemp("tls")
    (d / "tls.crt").write_bytes(serving.cert_pem)
    (d / "tls.key").write_bytes(serving.key_pem)
    return ca, d / "tls.crt", d / "tls.key"


@pytest.fixture
def server(tls: tuple[pki.KeyPair, Path, Path]) -> Iterator[Server]:
    _, cert, key = tls
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Handler,), {}))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state = Server(url=f"https://127.0.0.1:{httpd.server_address[1]}/prefix")
    httpd.RequestHandlerClass.server_state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def write_kubeconfig(
    path: Path, server: str, *, ca_pem: bytes | None = None, user: dict[str, str] | None = None
) -> Path:
    cluster: dict[str, str] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "test",
        "contexts": [{"name": "test", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user or {}}],
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def api(server: Server, tls: tuple[pki.KeyPair, Path, Path], tmp_path: Path) -> Iterator[kube_rest.Client]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, ca_pem=tls[0].cert_pem, user={"token": TOKEN})
    client = kube_rest.Client(kubeconfig, timeout=5)
    yield client
    client.close()


def test_get_sends_the_path_under_the_servers_prefix_with_the_token(api: kube_rest.Client, server: Server) -> None:
    server.answers["/prefix/api/v1/namespaces/ns/pods/p"] = (200, {"kind": "Pod", "metadata": {"name": "p"}})
    assert api.get("/api/v1/namespaces/ns/pods/p") == {"kind": "Pod", "metadata": {"name": "p"}}
    [seen] = server.seen
    assert (seen.method, seen.path) == ("GET", "/prefix/api/v1/namespaces/ns/pods/p")
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["Accept"] == "application/json"


def test_list_items_with_a_query(api: kube_rest.Client, server: Server) -> None:
    server.answers["/prefix/api/v1/nodes"] = (200, {"kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]})
    assert api.list("/api/v1/nodes", query={"labelSelector": "a=b,c"}) == [{"metadata": {"name": "n1"}}]
    assert server.seen[0].path == "/prefix/api/v1/nodes?labelSelector=a%3Db%2Cc"


@pytest.mark.parametrize(
    ("call", "method", "content_type"),
    [
        pytest.param(lambda api: api.create("/api/v1/namespaces", {"a": 1}), "POST", "application/json", id="create"),
        pytest.param(lambda api: api.replace("/api/v1/namespaces", {"a": 1}), "PUT", "application/json", id="replace"),
        pytest.param(
            lambda api: api.merge_patch("/api/v1/namespaces", {"a": 1}),
            "PATCH",
            kube_rest.MERGE_PATCH,
            id="merge-patch",
        ),
        pytest.param(
            lambda api: api.json_patch("/api/v1/namespaces", [{"a": 1}]),
            "PATCH",
            kube_rest.JSON_PATCH,
            id="json-patch",
        ),
    ],
)
def test_writes_send_json_with_their_content_type(
    api: kube_rest.Client, server: Server, call: Any, method: str, content_type: str
) -> None:
    server.answers["/prefix/api/v1/namespaces"] = (201, {"kind": "Namespace"})
    assert call(api) == {"kind": "Namespace"}
    [seen] = server.seen
    assert (seen.method, seen.headers["Content-Type"]) == (method, content_type)
    assert seen.body in ({"a": 1}, [{"a": 1}])


def test_absent_is_none_an_empty_list_or_already_deleted(api: kube_rest.Client, server: Server) -> None:
    assert api.get("/api/v1/namespaces/ns/pods/p") is None
    assert api.list("/apis/example.com/v1/widgets") == []
    api.delete("/api/v1/namespaces/ns/pods/p")
    assert [s.method for s in server.seen] == ["GET", "GET", "DELETE"]


@pytest.mark.parametrize(
    ("answer", "status", "reason", "message"),
    [
        pytest.param(
            (404, NOT_FOUND),
            404,
            "NotFound",
            'GET /api/v1/namespaces/ns/pods/p: HTTP 404: pods "p" not found',
            id="404",
        ),
        pytest.param(
            (409, {"kind": "Status", "reason": "AlreadyExists", "message": 'pods "p" already exists'}),
            409,
            "AlreadyExists",
            'GET /api/v1/namespaces/ns/pods/p: HTTP 409: pods "p" already exists',
            id="409",
        ),
        pytest.param(
            (422, {"kind": "Status", "reason": "Invalid", "message": "spec.size: Invalid value"}),
            422,
            "Invalid",
            "GET /api/v1/namespaces/ns/pods/p: HTTP 422: spec.size: Invalid value",
            id="422",
        ),
        pytest.param(
            (503, "service unavailable"),
            503,
            None,
            "GET /api/v1/namespaces/ns/pods/p: HTTP 503: service unavailable",
            id="text-body",
        ),
        pytest.param(
            (500, ["a list"]), 500, None, 'GET /api/v1/namespaces/ns/pods/p: HTTP 500: ["a list"]', id="json-not-status"
        ),
    ],
)
def test_an_error_answer_is_an_api_error(
    api: kube_rest.Client,
    server: Server,
    answer: tuple[int, Any],
    status: int,
    reason: str | None,
    message: str,
) -> None:
    server.answers["/prefix/api/v1/namespaces/ns/pods/p"] = answer
    with pytest.raises(kube_rest.ApiError) as error:
        api.request("GET", "/api/v1/namespaces/ns/pods/p")
    assert (error.value.status, error.value.reason, str(error.value)) == (status, reason, message)
    assert error.value.body == (json.dumps(answer[1]) if not isinstance(answer[1], str) else answer[1])


def test_errors_other_than_404_are_raised_by_get_and_delete(api: kube_rest.Client, server: Server) -> None:
    server.answers["/prefix/api/v1/namespaces/ns"] = (403, {"kind": "Status", "reason": "Forbidden", "message": "no"})
    with pytest.raises(kube_rest.ApiError, match="HTTP 403: no"):
        api.get("/api/v1/namespaces/ns")
    with pytest.raises(kube_rest.ApiError, match="HTTP 403: no"):
        api.delete("/api/v1/namespaces/ns")


def test_a_server_the_ca_did_not_sign_is_refused(server: Server, tmp_path: Path) -> None:
    other_ca = pki.make_ca("another-ca")
    client = kube_rest.Client(
        write_kubeconfig(tmp_path / "kubeconfig", server.url, ca_pem=other_ca.cert_pem), timeout=5
    )
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            client.get("/version")
    finally:
        client.close()
    assert server.seen == []


def test_only_https_servers(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:8080")
    with pytest.raises(ValueError, match=re.escape("only https servers are supported, got http://127.0.0.1:8080")):
        kube_rest.Client(kubeconfig)


def test_webhook_not_answering() -> None:
    def error(status: int, message: str) -> kube_rest.ApiError:
        return kube_rest.ApiError("POST", "/x", status, json.dumps({"message": message}))

    assert kube_rest.webhook_not_answering(error(500, 'Internal error occurred: failed calling webhook "w": EOF'))
    assert not kube_rest.webhook_not_answering(error(400, 'admission webhook "w" denied the request'))
    assert not kube_rest.webhook_not_answering(error(500, "etcdserver: request timed out"))


def test_watch_yields_each_event_line_on_a_connection_of_its_own(api: kube_rest.Client, server: Server) -> None:
    events = [{"type": "ADDED", "object": {"metadata": {"name": "a"}}}, {"type": "MODIFIED", "object": {}}]
    server.answers["/prefix/apis/cert-manager.io/v1/certificates"] = (200, "\n".join(map(json.dumps, events)) + "\n")
    assert list(api.watch("/apis/cert-manager.io/v1/certificates", timeout_seconds=7)) == events
    [seen] = server.seen
    assert seen.path == "/prefix/apis/cert-manager.io/v1/certificates?watch=1&timeoutSeconds=7"
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"


def test_watch_of_a_collection_not_served_is_an_api_error(api: kube_rest.Client) -> None:
    with pytest.raises(kube_rest.ApiError) as e:
        list(api.watch("/apis/cert-manager.io/v1/issuers"))
    assert e.value.status == 404
