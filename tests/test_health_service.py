"""Service health: a cluster IP; headless and ExternalName services are ready as applied."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.model import Health
from kfctl.health.service import service

CASES = [
    pytest.param("spec: {clusterIP: 10.96.0.7}", Health("ready", "cluster IP 10.96.0.7"), id="cluster-ip"),
    pytest.param("spec: {clusterIP: None}", Health("ready", "headless"), id="headless"),
    pytest.param(
        "spec: {type: ExternalName, externalName: db.example.com}",
        Health("ready", "external name db.example.com"),
        id="external-name",
    ),
    pytest.param("spec: {}", Health("progressing", "waiting for a cluster IP"), id="no-ip"),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_service(manifest: str, expected: Health) -> None:
    assert service(yaml.safe_load(manifest)) == expected
