"""kwok's configuration for e2e/cluster: an explicit KwokConfiguration plus our pod stages. TEST CODE.

The stages are in kwok-pod-stages.yaml (read it for what kwok does to pods). Which pods the process runtime
(runtime.py) runs is known only at `up`: it depends on which operator binaries are built and on whether a
runtime runs at all (it needs root). This module turns that into the CEL test the stages use for RUNTIME_POD:
"some container's image is of a repository the runtime has a binary for", the same rule as
runtime.is_runtime_image. It is the repository, not the release: a pod of a release without a binary is the
runtime's too (it reports ErrImagePull), so kwok never makes it Ready.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from kfctl_testbed.runtime import RUNNABLE_IMAGES, STANDIN_IMAGES, built_releases

STAGES_FILE = Path(__file__).resolve().parent / "kwok-pod-stages.yaml"
PLACEHOLDER = "RUNTIME_POD"
TRAINING_PLACEHOLDER = "TRAINING_SECONDS"
# How long a simulated training pod runs, from its startTime (the tests' own jobs need no more; upstream's test
# scripts, which wait for a training pod to be Ready before they wait for the job, get a cluster with more).
TRAINING_SECONDS = 3


def runnable_repositories(bin_dir: Path | None) -> list[str]:
    """Image repositories of which the runtime has some release in `bin_dir`, or a stand-in (none without a runtime)."""
    if bin_dir is None:
        return []
    return sorted(repo for repo in [*RUNNABLE_IMAGES, *STANDIN_IMAGES] if built_releases(repo, bin_dir))


def runtime_pod_expression(repositories: list[str]) -> str:
    """CEL: a container's image is `repo`, `repo:<tag>` or `repo@<digest>` of one of `repositories`."""
    if not repositories:
        return "false"
    tests = []
    for repo in repositories:
        quoted = json.dumps(repo)
        tests.append(
            f"c.image == {quoted} || c.image.startsWith({json.dumps(repo + ':')})"
            f" || c.image.startsWith({json.dumps(repo + '@')})"
        )
    return f"self.spec.containers.exists(c, {' || '.join(tests)})"


def pod_stages(repositories: list[str], *, training_seconds: int = TRAINING_SECONDS) -> list[dict[str, Any]]:
    """The Stage objects of kwok-pod-stages.yaml with RUNTIME_POD and TRAINING_SECONDS filled in."""
    stages: list[dict[str, Any]] = yaml.safe_load(STAGES_FILE.read_text())["stages"]
    expression = runtime_pod_expression(repositories)
    for stage in stages:
        for match in stage["spec"].get("selector", {}).get("matchExpressions", []):
            if "cel" in match:
                match["cel"]["expression"] = match["cel"]["expression"].replace(PLACEHOLDER, expression)
        delay = stage["spec"].get("delay", {}).get("durationFrom", {}).get("cel")
        if delay:
            delay["expression"] = delay["expression"].replace(TRAINING_PLACEHOLDER, f"{training_seconds}s")
    return stages


def kwok_config(repositories: list[str], *, training_seconds: int = TRAINING_SECONDS) -> str:
    """The whole --config file: KwokConfiguration first, then the pod stages (multi-document YAML)."""
    documents = [
        {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration", "options": {}},
        *pod_stages(repositories, training_seconds=training_seconds),
    ]
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, width=1000)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the status templates) as literal blocks, so <state>/kwok.yaml reads like the source."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)
