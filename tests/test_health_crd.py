"""CRD health: Established and NamesAccepted; a names conflict is a failure."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.crd import crd
from kfctl.health.model import Health

CASES = [
    pytest.param("status: {}", Health("progressing", "waiting for NamesAccepted"), id="fresh"),
    pytest.param(
        "status: {conditions: [{type: NamesAccepted, status: 'True'}]}",
        Health("progressing", "waiting for Established"),
        id="names-accepted-only",
    ),
    pytest.param(
        "status: {conditions: [{type: NamesAccepted, status: 'True'}, {type: Established, status: 'True'}]}",
        Health("ready", "established"),
        id="established",
    ),
    pytest.param(
        "status: {conditions: [{type: NamesAccepted, status: 'False', reason: MultipleNamesNotAllowed,"
        " message: 'plural \"tfjobs\" is already in use'}]}",
        Health("failed", 'names not accepted: MultipleNamesNotAllowed: plural "tfjobs" is already in use'),
        id="names-conflict",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_crd(manifest: str, expected: Health) -> None:
    assert crd(yaml.safe_load(manifest)) == expected
