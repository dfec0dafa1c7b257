"""What kfctl's e2e tests share besides fixtures: the handle of a test cluster, `poll`, `run_cluster`
(e2e/cluster as a subprocess) and `dump_all`. Their API client is kfctl_testbed.kube_rest (the `api` fixture)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kfctl_testbed import poll as polling

E2E_DIR = Path(__file__).resolve().parent
CLUSTER = E2E_DIR / "cluster"
T = TypeVar("T")
# libyaml's emitter when PyYAML has it (the wheels do). Loading goes through kfctl.yamlio.safe_load_all, libyaml's
# loader too: PyYAML's pure-Python loader and dumper took 34 s and 21 s for the catalog's 306 rendered objects
# (8.8 MB, mostly CRD schemas), libyaml's 4 s each; most of what the per-platform dry runs cost.
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True)
class Cluster:
    kubeconfig: str
    # Where e2e/cluster keeps this cluster's state: set when e2e/cluster made it (even one named by
    # $KUBECONFIG), None for any other cluster, whose processes are not ours to inspect.
    state_dir: Path | None
    managed: bool = False  # started by this test session, which stops it at its end

    @property
    def ours(self) -> bool:
        return self.state_dir is not None

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str) -> Cluster:
        """A cluster named by the environment; recognised as e2e/cluster's by the state file beside it."""
        path = Path(kubeconfig.split(os.pathsep)[0]).resolve()
        state_file = path.parent / "state.json"
        state_dir = None
        if state_file.is_file():
            with contextlib.suppress(ValueError, OSError):
                if Path(json.loads(state_file.read_text()).get("kubeconfig", "")).resolve() == path:
                    state_dir = path.parent
        return cls(kubeconfig=kubeconfig, state_dir=state_dir)


def run_cluster(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLUSTER), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def dump_all(objects: Any, **options: Any) -> str:
    """YAML of many objects for kubectl or a file: libyaml's emitter with PyYAML's safe representer, so the same
    values as yaml.safe_dump_all (not always the same line breaks; no file a test compares byte for byte)."""
    return yaml.dump_all(objects, Dumper=_DUMPER, **options)


def poll(check: Callable[[], T], *, timeout: float, what: str, interval: float = 0.2) -> T:
    """check()'s first truthy result (kfctl_testbed.poll: errors count as not-yet); after `timeout` seconds the
    test fails, naming `what` and the last result or error."""
    try:
        return polling.poll(check, timeout=timeout, what=what, interval=interval)
    except polling.PollTimeout as e:
        pytest.fail(str(e), pytrace=False)
