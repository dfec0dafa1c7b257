"""Which failures the engine retries and which stop it: one row per API answer, exact verdict and message."""

from __future__ import annotations

import pytest

from kfctl.engine.retry import backoff, classify
from kfctl.k8s.api import ApiError, NoKindMatch, NotFound, Unreachable

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
            NotFound('namespaces "kubeflow" not found'),
            "transient",
            'namespaces "kubeflow" not found',
            id="404-namespace-not-yet",
        ),
        pytest.param(
            NotFound("the server could not find the requested resource"),
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
        pytest.param(
            ApiError(403, "unable to create new content in namespace x because it is being terminated"),
            "transient",
            "unable to create new content in namespace x because it is being terminated",
            id="namespace-terminating",
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
        pytest.param(ValueError("boom"), "fatal", "ValueError: boom", id="not-an-api-error"),
    ],
)
def test_classify(err: BaseException, verdict: str, message: str) -> None:
    c = classify(err)
    assert (c.verdict, c.message) == (verdict, message)


@pytest.mark.parametrize(
    ("attempt", "retry_after", "seconds"),
    [(1, None, 0.5), (2, None, 1.0), (4, None, 4.0), (10, None, 10.0), (1, 3.0, 3.0), (1, 600.0, 60.0)],
)
def test_backoff(attempt: int, retry_after: float | None, seconds: float) -> None:
    assert backoff(attempt, retry_after=retry_after) == seconds
