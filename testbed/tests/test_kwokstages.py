"""kfctl_testbed.kwokstages: kwok's pod stages with their placeholders filled in, and the kwok.yaml `up` writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from kfctl_testbed import kwokstages
from kfctl_testbed.runtime import RUNNABLE_IMAGES

REPO = "ghcr.io/kubeflow/training-v1/training-operator"


def expressions(stages: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Stage name -> its CEL expressions (selector and delay)."""
    out: dict[str, list[str]] = {}
    for stage in stages:
        spec = stage["spec"]
        cel = [m["cel"]["expression"] for m in spec.get("selector", {}).get("matchExpressions", []) if "cel" in m]
        delay = spec.get("delay", {}).get("durationFrom", {}).get("cel")
        out[stage["metadata"]["name"]] = cel + ([delay["expression"]] if delay else [])
    return out


def test_runtime_pod_expression() -> None:
    assert kwokstages.runtime_pod_expression([]) == "false"
    assert kwokstages.runtime_pod_expression(["a/b", "c:5000/d"]) == (
        'self.spec.containers.exists(c, c.image == "a/b" || c.image.startsWith("a/b:") || c.image.startsWith("a/b@")'
        ' || c.image == "c:5000/d" || c.image.startsWith("c:5000/d:") || c.image.startsWith("c:5000/d@"))'
    )


def test_pod_stages_fill_every_placeholder() -> None:
    stages = kwokstages.pod_stages([REPO], training_seconds=42)
    text = json.dumps(stages)
    assert kwokstages.PLACEHOLDER not in text
    assert kwokstages.TRAINING_PLACEHOLDER not in text
    runtime_pod = kwokstages.runtime_pod_expression([REPO])
    found = expressions(stages)
    assert found["pod-running"] == [f"!({runtime_pod})"]
    assert found["pod-running-runtime"] == [runtime_pod]
    assert found["pod-training-finish"] == [
        f"!({runtime_pod})",
        "self.status.startTime + duration('42s') - Now()",
    ]


def test_without_a_runtime_no_pod_is_the_runtimes() -> None:
    found = expressions(kwokstages.pod_stages([]))
    assert found["pod-running"] == ["!(false)"]
    assert found["pod-running-runtime"] == ["false"]
    assert f"duration('{kwokstages.TRAINING_SECONDS}s')" in found["pod-training-finish"][-1]


def test_kwok_config_is_the_configuration_then_the_stages() -> None:
    text = kwokstages.kwok_config([REPO], training_seconds=5)
    docs = list(yaml.safe_load_all(text))
    assert docs[0] == {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration", "options": {}}
    assert docs[1:] == kwokstages.pod_stages([REPO], training_seconds=5)
    assert {d["kind"] for d in docs[1:]} == {"Stage"}
    # The status templates (multi-line strings) stay literal blocks, readable as in the source.
    assert "statusTemplate: |" in text


def test_runnable_repositories_are_those_with_a_built_release(tmp_path: Path) -> None:
    assert kwokstages.runnable_repositories(None) == []
    # with a runtime, its stand-ins' repositories are runnable whatever is built
    assert kwokstages.runnable_repositories(tmp_path) == ["gcr.io/istio-release/proxyv2", "ghcr.io/dexidp/dex"]
    (tmp_path / RUNNABLE_IMAGES[REPO]["v1-5c0e763"]).touch()
    assert REPO in kwokstages.runnable_repositories(tmp_path)
