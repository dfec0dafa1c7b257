"""Webhook backend health: a ready endpoint, a CA in place, a healthy Deployment and Certificate."""

from __future__ import annotations

import pytest

from kfctl.health.model import Health
from kfctl.health.webhook import BackendFacts, webhook_backend

SVC = "kubeflow/kserve-webhook-server-service"
DEP = "kubeflow/kserve-controller-manager"
CASES = [
    pytest.param(
        BackendFacts(SVC, service_exists=False),
        Health("progressing", f"Service {SVC} does not exist"),
        id="no-service",
    ),
    pytest.param(
        BackendFacts(SVC, deployment=Health("progressing", "0/1 available"), deployment_name=DEP),
        Health("progressing", f"no ready endpoint; Deployment {DEP} 0/1 available"),
        id="deployment-not-available",
    ),
    pytest.param(
        BackendFacts(SVC, deployment=Health("failed", "rollout stuck"), deployment_name=DEP),
        Health("failed", f"Deployment {DEP}: rollout stuck"),
        id="deployment-failed",
    ),
    pytest.param(
        BackendFacts(
            SVC,
            ready_endpoints=1,
            certificate=Health("progressing", "not ready"),
            certificate_name="kubeflow/serving-cert",
        ),
        Health("progressing", "Certificate kubeflow/serving-cert not ready"),
        id="certificate-not-ready",
    ),
    pytest.param(
        BackendFacts(SVC, ready_endpoints=1),
        Health("progressing", "caBundle not injected yet"),
        id="no-ca-bundle",
    ),
    pytest.param(
        BackendFacts(SVC, ready_endpoints=2, ca_bundle_set=True),
        Health("ready", f"backend {SVC} (2 ready endpoint(s)) ready"),
        id="ready",
    ),
    pytest.param(
        BackendFacts("https://127.0.0.1:9443/validate", is_url=True, ca_required=False),
        Health("ready", "backend https://127.0.0.1:9443/validate ready"),
        id="url-webhook",
    ),
]


@pytest.mark.parametrize(("facts", "expected"), CASES)
def test_webhook_backend(facts: BackendFacts, expected: Health) -> None:
    assert webhook_backend(facts) == expected
