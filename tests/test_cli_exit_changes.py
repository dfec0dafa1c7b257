"""Exit codes scripts can live with: `apply` and `diff` succeed with 0 whether or not anything changed; with
--detailed-exitcode (as Terraform's) 0 says nothing changed or differs, 15 that something did. Run through the
CLI's main against a fake cluster: a ConfigMap applied once, then applied or diffed again."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import FakeCluster, write_app

from kfctl.cli import target
from kfctl.cli.main import main

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kubeflow}\ndata: {a: '1'}\n"
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n---\n"


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = FakeCluster()
    monkeypatch.setattr(target, "open_cluster", lambda **_: c)  # every command opens it there
    return c


def kfctl(app: Path, *args: str) -> int:
    return main([args[0], str(app), "--skip-generate", "-q", *args[1:]])


@pytest.mark.parametrize(
    ("first", "then", "expected"),
    [
        pytest.param(False, ("apply",), 0, id="apply that changes something"),
        pytest.param(False, ("apply", "--detailed-exitcode"), 15, id="apply that changes something, detailed"),
        pytest.param(True, ("apply",), 0, id="apply with nothing to change"),
        pytest.param(True, ("apply", "--detailed-exitcode"), 0, id="apply with nothing to change, detailed"),
        pytest.param(False, ("diff",), 0, id="diff with differences"),
        pytest.param(False, ("diff", "--detailed-exitcode"), 15, id="diff with differences, detailed"),
        pytest.param(True, ("diff",), 0, id="diff without differences"),
        pytest.param(True, ("diff", "--detailed-exitcode"), 0, id="diff without differences, detailed"),
    ],
)
def test_exit_code(tmp_path: Path, cluster: FakeCluster, first: bool, then: tuple[str, ...], expected: int) -> None:
    app = tmp_path / "demo"
    write_app(app, "common", rendered={"common": NAMESPACE + CONFIGMAP})
    if first:
        assert kfctl(app, "apply") == 0
    assert kfctl(app, *then) == expected
