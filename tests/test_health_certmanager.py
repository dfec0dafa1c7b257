"""cert-manager Certificate/Issuer health: Ready=True."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.certmanager import certmanager
from kfctl.health.model import Health

CASES = [
    pytest.param("status: {}", Health("progressing", "waiting for cert-manager to report Ready"), id="fresh"),
    pytest.param(
        "status: {conditions: [{type: Ready, status: 'False', reason: DoesNotExist,"
        " message: Issuing certificate as Secret does not exist}]}",
        Health("progressing", "not ready: DoesNotExist: Issuing certificate as Secret does not exist"),
        id="issuing",
    ),
    pytest.param("status: {conditions: [{type: Ready, status: 'True'}]}", Health("ready", "ready"), id="ready"),
    pytest.param(
        "metadata: {generation: 3}\nstatus: {observedGeneration: 2, conditions: [{type: Ready, status: 'True'}]}",
        Health("progressing", "waiting for the controller to observe generation 3 (seen 2)"),
        id="stale-ready",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_certmanager(manifest: str, expected: Health) -> None:
    assert certmanager(yaml.safe_load(manifest)) == expected
