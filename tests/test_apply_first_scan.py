"""What exists of the bundle is read once per run: a first install reuses the scan it made before taking the
lock (no inventory exists under the lock, so nothing was applied since); a later run scans under the lock.
Run through the CLI's main against a fake cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, write_app

from kfctl.cli import target
from kfctl.cli.main import main
from kfctl.engine import ownership

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n---\n"
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kubeflow}\ndata: {a: '1'}\n"


@pytest.mark.parametrize(
    ("runs", "scans", "summary"),
    [
        pytest.param(
            1, 1, {"created": 1, "unchanged": 1}, id="first install: one scan, the namespace made for the lock"
        ),
        pytest.param(2, 1, {"created": 0, "unchanged": 2}, id="re-apply: one scan, under the lock"),
    ],
)
def test_each_run_scans_the_cluster_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    runs: int,
    scans: int,
    summary: dict[str, int],
) -> None:
    cluster = FakeCluster()
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    calls: list[int] = []
    real = ownership.scan

    def counting(*args: Any, **kwargs: Any) -> ownership.Scan:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ownership, "scan", counting)
    app = tmp_path / "demo"
    write_app(app, "common", rendered={"common": NAMESPACE + CONFIGMAP})
    for _ in range(runs):
        calls.clear()
        capsys.readouterr()
        assert main(["apply", str(app), "--skip-generate", "-o", "json"]) == 0
    assert len(calls) == scans
    last = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")][-1]
    assert {k: last["summary"][k] for k in summary} == summary
