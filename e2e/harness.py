"""What kfctl's e2e tests share besides fixtures: the handle of a test cluster, an API client for it and
`poll`, and `run_cluster` (e2e/cluster as a subprocess)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

E2E_DIR = Path(__file__).resolve().parent
CLUSTER = E2E_DIR / "cluster"


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


def api_client(kubeconfig: str) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


def poll(check: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.2) -> Any:
    """Return check()'s first truthy result; fail the test after `timeout` seconds. Errors count as
    not-yet, and the last one is shown on timeout."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except Exception as e:
            last_error = e
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}{detail}", pytrace=False)
        time.sleep(interval)
