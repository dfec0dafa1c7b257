"""Which failures the engine retries and which stop it: one row per API answer, the type kfctl.k8s.errors gives
it (read back as a verdict) and the exact message.

``test_status`` feeds Status bodies as a Kubernetes 1.33 API server sent them (captured from e2e/cluster)
through the client: a server on 127.0.0.1 answers its request with them, and the row reads the error the client
raises; ``test_classify`` covers answers without a Status (the code decides) and failures that are not API answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import kubernetes.client
import pytest

from kfctl.engine.retry import backoff
from kfctl.k8s.api import ApiError, ClusterInfo, NoKindMatch, NotFound, Unreachable
from kfctl.k8s.client import KubeClient
from kfctl.k8s.errors import Denied, Immutable, KubeError, Transient


@dataclass(frozen=True)
class Classified:
    """What the engine does with a failure: retry it (transient), fail on it (denied, fatal) or, with
    --recreate-immutable, recreate the object (immutable); with the message it reports."""

    verdict: str
    message: str
    retry_after: float | None = None
    fields: tuple[str, ...] = ()


def classify(err: KubeError) -> Classified:
    if isinstance(err, Transient):
        return Classified("transient", err.explanation, err.retry_after)
    verdict = "immutable" if isinstance(err, Immutable) else "denied" if isinstance(err, Denied) else "fatal"
    return Classified(verdict, err.explanation, fields=err.fields)


WEBHOOK_DOWN = 'Internal error occurred: failed calling webhook "v.kserve.io": no endpoints available for service "x"'
DENIAL = 'admission webhook "v.kserve.io" denied the request: bad storageUri'


@pytest.mark.parametrize(
    ("err", "verdict", "message"),
    [
        pytest.param(ApiError(429, "slow down", retry_after=2.0), "transient", "throttled: slow down", id="429"),
        pytest.param(ApiError(503, "unavailable"), "transient", "unavailable", id="503"),
        pytest.param(ApiError(500, WEBHOOK_DOWN), "transient", WEBHOOK_DOWN, id="webhook-not-answering"),
        pytest.param(
            ApiError(409, "the object has been modified"),
            "transient",
            "the object has been modified",
            id="409-conflict",
        ),
        pytest.param(
            ApiError(404, 'namespaces "kubeflow" not found'),
            "transient",
            'namespaces "kubeflow" not found',
            id="404-namespace-not-yet",
        ),
        pytest.param(
            ApiError(404, "the server could not find the requested resource"),
            "transient",
            "the server could not find the requested resource",
            id="404-kind-not-yet-served",
        ),
        pytest.param(
            NoKindMatch("example.com", "v1", "Widget"),
            "transient",
            'no matches for kind "Widget" in version "example.com/v1"',
            id="no-kind-match",
        ),
        pytest.param(
            Unreachable("connection refused"),
            "transient",
            "cannot reach the API server: connection refused",
            id="unreachable",
        ),
        pytest.param(ApiError(400, DENIAL), "denied", DENIAL, id="webhook-denial"),
        pytest.param(
            ApiError(403, 'configmaps is forbidden: User "u" cannot patch'),
            "denied",
            'configmaps is forbidden: User "u" cannot patch',
            id="403-rbac",
        ),
        pytest.param(
            ApiError(422, "spec.replicas: Invalid value: -1"),
            "denied",
            "spec.replicas: Invalid value: -1",
            id="422-schema",
        ),
        pytest.param(
            ApiError(
                422,
                "spec.selector: field is immutable",
                causes=[{"field": "spec.selector", "message": "field is immutable"}],
            ),
            "immutable",
            "spec.selector: field is immutable",
            id="422-immutable",
        ),
        pytest.param(
            ApiError(403, "unable to create new content in namespace x because it is being terminated"),
            "denied",
            "unable to create new content in namespace x because it is being terminated",
            id="forbidden-is-judged-by-its-cause-not-its-words",
        ),
    ],
)
def test_classify(err: KubeError, verdict: str, message: str) -> None:
    c = classify(err)
    assert (c.verdict, c.message) == (verdict, message)


class AnsweringServer:
    """An HTTP server on 127.0.0.1 that answers every request with the status, body and Retry-After it is given;
    ``error_for`` is the error kfctl's client raises for that answer (to `GET /version`)."""

    def __init__(self) -> None:
        self.answer: tuple[int, str, str | None] = (200, "{}", None)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, text, retry_after = server.answer
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cfg = kubernetes.client.Configuration()
        cfg.host = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.client = KubeClient(kubernetes.client.ApiClient(cfg), ClusterInfo(cfg.host, "test", "-"))

    def error_for(self, status: int, text: str, retry_after: str | None) -> ApiError:
        self.answer = (status, text, retry_after)
        with pytest.raises(ApiError) as raised:
            self.client.server_version()
        return raised.value


@pytest.fixture(scope="module")
def api_server() -> Iterator[AnsweringServer]:
    server = AnsweringServer()
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    yield server
    server.http.shutdown()
    server.http.server_close()


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A Status body as the API server writes it."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body.update(message=message, reason=reason, code=code)
    if details:
        body["details"] = details
    return body


INVALID = (
    'Deployment.apps "bad" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, '
    'spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", '
    '"IfNotPresent", "Never"]'
)
NOT_SUPPORTED = 'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'
SELECTOR = (
    'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
    "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
)
WEBHOOK_CALL = (
    'failed calling webhook "v.kserve.io": failed to call webhook: Post '
    '"https://kserve-webhook.kserve.svc:443/validate?timeout=10s": no endpoints available for service "kserve-webhook"'
)


@pytest.mark.parametrize(
    ("body", "retry_after", "expected"),
    [
        pytest.param(
            status(409, "AlreadyExists", 'configmaps "x" already exists', name="x", kind="configmaps"),
            None,
            Classified("denied", 'configmaps "x" already exists'),
            id="already-exists-is-final",
        ),
        pytest.param(
            status(
                409,
                "Conflict",
                'Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your '
                "changes to the latest version and try again",
                name="x",
                kind="configmaps",
            ),
            None,
            Classified(
                "transient",
                'Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your '
                "changes to the latest version and try again",
            ),
            id="conflict-optimistic-lock-is-transient",
        ),
        pytest.param(
            status(
                409,
                "Conflict",
                'Operation cannot be fulfilled on ConfigMap "x": the UID in the precondition (a1) does not match the '
                "UID in record (b2). The object might have been deleted and then recreated",
                name="x",
                kind="ConfigMap",
            ),
            None,
            Classified(
                "denied",
                'Operation cannot be fulfilled on ConfigMap "x": the UID in the precondition (a1) does not match the '
                "UID in record (b2). The object might have been deleted and then recreated",
            ),
            id="conflict-uid-precondition-is-final",
        ),
        pytest.param(
            status(
                409,
                "Conflict",
                'Apply failed with 1 conflict: conflict with "other": .data.a',
                causes=[{"reason": "FieldManagerConflict", "message": 'conflict with "other"', "field": ".data.a"}],
            ),
            None,
            Classified("denied", 'Apply failed with 1 conflict: conflict with "other": .data.a'),
            id="conflict-field-manager-is-final",
        ),
        pytest.param(
            status(
                422,
                "Invalid",
                INVALID,
                name="bad",
                group="apps",
                kind="Deployment",
                causes=[
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: -1: must be greater than or equal to 0",
                        "field": "spec.replicas",
                    },
                    {
                        "reason": "FieldValueNotSupported",
                        "message": NOT_SUPPORTED,
                        "field": "spec.template.spec.containers[0].imagePullPolicy",
                    },
                ],
            ),
            None,
            Classified(
                "denied",
                "schema denial: spec.replicas: Invalid value: -1: must be greater than or equal to 0; "
                f"spec.template.spec.containers[0].imagePullPolicy: {NOT_SUPPORTED}",
                fields=("spec.replicas", "spec.template.spec.containers[0].imagePullPolicy"),
            ),
            id="invalid-value-and-not-supported-quote-each-field",
        ),
        pytest.param(
            status(
                422,
                "Invalid",
                'Deployment.apps "bad" is invalid: spec.template.spec.containers[0].image: Required value',
                name="bad",
                group="apps",
                kind="Deployment",
                causes=[
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": "spec.template.spec.containers[0].image",
                    }
                ],
            ),
            None,
            Classified(
                "denied",
                "schema denial: spec.template.spec.containers[0].image: Required value",
                fields=("spec.template.spec.containers[0].image",),
            ),
            id="invalid-required-value",
        ),
        pytest.param(
            status(422, "Invalid", 'Widget.example.com "w" is invalid: the object is wrong', name="w", kind="Widget"),
            None,
            Classified("denied", 'Widget.example.com "w" is invalid: the object is wrong'),
            id="invalid-without-causes-keeps-the-message",
        ),
        pytest.param(
            status(
                422,
                "Invalid",
                f'Deployment.apps "dep0" is invalid: spec.selector: {SELECTOR}',
                name="dep0",
                group="apps",
                kind="Deployment",
                causes=[{"reason": "FieldValueInvalid", "message": SELECTOR, "field": "spec.selector"}],
            ),
            None,
            Classified(
                "immutable", f'Deployment.apps "dep0" is invalid: spec.selector: {SELECTOR}', fields=("spec.selector",)
            ),
            id="invalid-immutable-selector",
        ),
        pytest.param(
            status(
                422,
                "Invalid",
                'ConfigMap "imm" is invalid: data: Forbidden: field is immutable when `immutable` is set',
                name="imm",
                kind="ConfigMap",
                causes=[
                    {
                        "reason": "FieldValueForbidden",
                        "message": "Forbidden: field is immutable when `immutable` is set",
                        "field": "data",
                    }
                ],
            ),
            None,
            Classified(
                "immutable",
                'ConfigMap "imm" is invalid: data: Forbidden: field is immutable when `immutable` is set',
                fields=("data",),
            ),
            id="invalid-immutable-configmap-data",
        ),
        pytest.param(
            status(404, "NotFound", 'namespaces "nope" not found', name="nope", kind="namespaces"),
            None,
            Classified("transient", 'namespaces "nope" not found'),
            id="not-found-namespace-not-yet-is-transient",
        ),
        pytest.param(
            status(
                403,
                "Forbidden",
                'configmaps "q" is forbidden: unable to create new content in namespace h6t because it is being '
                "terminated",
                name="q",
                kind="configmaps",
                causes=[
                    {
                        "reason": "NamespaceTerminating",
                        "message": "namespace h6t is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            ),
            None,
            Classified(
                "transient",
                'configmaps "q" is forbidden: unable to create new content in namespace h6t because it is being '
                "terminated",
            ),
            id="forbidden-namespace-terminating-is-transient",
        ),
        pytest.param(
            status(
                403,
                "Forbidden",
                'configmaps "a" is forbidden: User "bob" cannot patch resource "configmaps" in API group "" in the '
                'namespace "shared"',
                name="a",
                kind="configmaps",
            ),
            None,
            Classified(
                "denied",
                'configmaps "a" is forbidden: User "bob" cannot patch resource "configmaps" in API group "" in the '
                'namespace "shared"',
            ),
            id="forbidden-rbac-is-final",
        ),
        pytest.param(
            status(
                500, "InternalError", f"Internal error occurred: {WEBHOOK_CALL}", causes=[{"message": WEBHOOK_CALL}]
            ),
            None,
            Classified("transient", f"Internal error occurred: {WEBHOOK_CALL}"),
            id="webhook-cannot-be-called-is-transient",
        ),
        pytest.param(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 400, "message": DENIAL},
            None,
            Classified("denied", DENIAL),
            id="webhook-denial-without-reason",
        ),
        pytest.param(
            status(403, "Forbidden", DENIAL),
            None,
            Classified("denied", DENIAL),
            id="webhook-denial-controller-runtime-style",
        ),
        pytest.param(
            status(500, "InternalError", 'admission webhook "v.kserve.io" denied the request: cannot decode'),
            None,
            Classified("denied", 'admission webhook "v.kserve.io" denied the request: cannot decode'),
            id="webhook-denial-with-code-500-is-still-a-denial",
        ),
        pytest.param(
            status(429, "TooManyRequests", "Too many requests, please try again later.", retryAfterSeconds=2),
            "2",
            Classified("transient", "throttled: Too many requests, please try again later.", retry_after=2.0),
            id="too-many-requests-honours-retry-after",
        ),
        pytest.param(
            status(
                500,
                "ServerTimeout",
                "The create operation against configmaps could not be completed at this time, please try again.",
                kind="configmaps",
                retryAfterSeconds=2,
            ),
            "2",
            Classified(
                "transient",
                "The create operation against configmaps could not be completed at this time, please try again.",
                retry_after=2.0,
            ),
            id="server-timeout",
        ),
        pytest.param(
            status(
                504, "Timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded"
            ),
            None,
            Classified(
                "transient", "Timeout: request did not complete within requested timeout - context deadline exceeded"
            ),
            id="timeout",
        ),
        pytest.param(
            status(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
            None,
            Classified("transient", "the server is currently unable to handle the request"),
            id="service-unavailable",
        ),
        pytest.param(
            status(401, "Unauthorized", "Unauthorized"),
            None,
            Classified("denied", "Unauthorized"),
            id="unauthorized",
        ),
        pytest.param(
            status(409, "SomethingNew", "a reason this kfctl does not know"),
            None,
            Classified("denied", "a reason this kfctl does not know"),
            id="unknown-reason-falls-back-to-the-code",
        ),
        pytest.param(
            status(410, "Expired", "too old resource version: 1 (2)"),
            None,
            Classified("fatal", "too old resource version: 1 (2)"),
            id="expired-is-fatal",
        ),
    ],
)
def test_status(
    api_server: AnsweringServer, body: dict[str, Any], retry_after: str | None, expected: Classified
) -> None:
    assert classify(api_server.error_for(body["code"], json.dumps(body), retry_after)) == expected


def test_a_proxys_page_for_a_5xx_is_a_transient_error_quoting_it(api_server: AnsweringServer) -> None:
    page = "<html><body>502 Bad Gateway</body></html>"
    assert classify(api_server.error_for(502, page, None)) == Classified("transient", page)


@pytest.mark.parametrize(
    ("attempt", "retry_after", "seconds"),
    [(1, None, 0.5), (2, None, 1.0), (4, None, 4.0), (10, None, 10.0), (1, 3.0, 3.0), (1, 600.0, 60.0)],
)
def test_backoff(attempt: int, retry_after: float | None, seconds: float) -> None:
    assert backoff(attempt, retry_after=retry_after) == seconds


@pytest.mark.parametrize(
    ("err", "typed"),
    [
        pytest.param(ApiError(404, "x not found"), "NotFound", id="404"),
        pytest.param(ApiError(409, "the object has been modified"), "OptimisticLock", id="optimistic-lock"),
        pytest.param(
            ApiError(409, "Precondition failed: UID in precondition does not match", reason="Conflict"),
            "PreconditionFailed",
            id="precondition",
        ),
        pytest.param(ApiError(409, "x already exists", reason="AlreadyExists"), "AlreadyExists", id="already-exists"),
        pytest.param(ApiError(405, "x"), "MethodNotAllowed", id="405"),
        pytest.param(ApiError(500, WEBHOOK_DOWN), "Unavailable", id="webhook-not-answering"),
        pytest.param(ApiError(400, DENIAL), "WebhookDenied", id="webhook-denial"),
        pytest.param(ApiError(403, DENIAL, reason="Forbidden"), "WebhookDenied", id="a-webhooks-403-is-its-denial"),
        pytest.param(ApiError(401, "Unauthorized", reason="Unauthorized"), "Unauthorized", id="401"),
        pytest.param(ApiError(401, "Unauthorized"), "Unauthorized", id="401-without-a-status"),
        pytest.param(ApiError(403, "x is forbidden", reason="Forbidden"), "Forbidden", id="403-rbac"),
        pytest.param(ApiError(403, "<html>403</html>"), "Forbidden", id="403-without-a-status"),
        pytest.param(
            ApiError(403, "x is being terminated", reason="Forbidden", causes=[{"reason": "NamespaceTerminating"}]),
            "NamespaceTerminating",
            id="403-namespace-terminating",
        ),
        pytest.param(ApiError(410, "too old", reason="Expired"), "ApiError", id="unknown-stays-plain"),
    ],
)
def test_an_api_error_is_born_typed(err: ApiError, typed: str) -> None:
    """The client, the fakes and the tests all construct ApiError; what they get is the subclass its Status says."""
    assert type(err).__name__ == typed
    assert isinstance(err, ApiError)


def test_a_failed_webhook_call_names_the_webhook_and_why() -> None:
    err = ApiError(500, WEBHOOK_DOWN)
    assert (err.failed_webhook, err.missing_service, err.untrusted_certificate) == ("v.kserve.io", None, False)
    gone = ApiError(500, 'failed calling webhook "v.kserve.io": service "kserve-webhook" not found')
    assert (gone.failed_webhook, gone.missing_service) == ("v.kserve.io", "kserve-webhook")
    assert NotFound(404, "gone").failed_webhook is None
