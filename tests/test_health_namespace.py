"""Namespace health: Active; Terminating waits (the engine's timeout makes it a failure)."""

from __future__ import annotations

import pytest
import yaml

from kfctl.health.model import Health
from kfctl.health.namespace import namespace

CASES = [
    pytest.param("status: {phase: Active}", Health("ready", "active"), id="active"),
    pytest.param("status: {phase: Terminating}", Health("progressing", "namespace is being terminated"), id="term"),
    pytest.param("status: {}", Health("progressing", "phase unknown"), id="no-phase"),
]


@pytest.mark.parametrize(("manifest", "expected"), CASES)
def test_namespace(manifest: str, expected: Health) -> None:
    assert namespace(yaml.safe_load(manifest)) == expected
