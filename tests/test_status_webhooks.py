"""`kfctl status`: a webhook configuration is healthy only when the API server can call each of its webhooks and
each webhook's server serves its path (a controller Ready before it registered its handlers is not)."""

from __future__ import annotations

from typing import Any

import pytest
from fakecluster import FakeCluster, obj, ready_endpoint

from kfctl.app.status import webhooks_answer
from kfctl.health.model import Health
from kfctl.k8s.api import ProxyAnswer


def config(*, ca: str = "Q0E=", side_effects: str = "None") -> dict[str, Any]:
    client = {"service": {"name": "web", "namespace": "demo", "path": "/validate"}, "caBundle": ca}
    return obj(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "widgets",
        webhooks=[{"name": "w.example.com", "clientConfig": client, "sideEffects": side_effects}],
    )


def cluster(*, endpoint: bool = True, answer: ProxyAnswer | None = None) -> FakeCluster:
    c = FakeCluster()
    c.put(obj("v1", "Service", "web", "demo", spec={}))
    if endpoint:
        c.put(ready_endpoint("demo", "web"))
    if answer is not None:
        c.proxied[("demo", "web", "/validate")] = [answer]
    return c


@pytest.mark.parametrize(
    ("c", "hooks", "expected"),
    [
        (cluster(), config(), None),
        (
            cluster(answer=ProxyAnswer(404, from_api_server=False, text="404 page not found")),
            config(),
            Health(
                "progressing", "webhook w.example.com: its server answers but does not serve /validate yet (HTTP 404)"
            ),
        ),
        # A webhook with side effects is never sent a made-up review.
        (cluster(answer=ProxyAnswer(404, from_api_server=False)), config(side_effects="Some"), None),
        (cluster(), config(ca=""), Health("progressing", "webhook w.example.com: no caBundle injected yet")),
        (
            cluster(endpoint=False),
            config(),
            Health("progressing", "webhook w.example.com: Service demo/web has no ready endpoint"),
        ),
    ],
    ids=["answers", "no-handler-yet", "side-effects-not-asked", "no-ca", "no-endpoint"],
)
def test_a_webhook_configuration_is_healthy_when_every_webhook_answers(
    c: FakeCluster, hooks: dict[str, Any], expected: Health | None
) -> None:
    assert webhooks_answer(c, hooks) == expected
