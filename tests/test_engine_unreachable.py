"""A cluster that cannot be reached is exit 6 with a message naming the server, context and kubeconfig."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import write_app

from kfctl.cli.main import main

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: nowhere-ctx
  context: {cluster: nowhere, user: u}
current-context: nowhere-ctx
users:
- name: u
  user: {token: abc}
"""


@pytest.mark.parametrize("command", ["status", "delete"])
def test_unreachable_cluster_is_exit_6_naming_where_kfctl_looked(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    write_app(tmp_path, "common")
    code = main([command, str(tmp_path), "--kubeconfig", str(tmp_path / "kubeconfig")])
    err = capsys.readouterr().err
    assert code == 6
    assert err.startswith(
        "Error (cluster error): cannot reach the cluster: server https://127.0.0.1:1 "
        f"(context nowhere-ctx, kubeconfig {tmp_path / 'kubeconfig'})\n"
    )
    assert "Connection refused" in err
    assert "Traceback" not in err


def test_a_missing_kubeconfig_is_exit_6_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_app(tmp_path, "common")
    code = main(["status", str(tmp_path), "--kubeconfig", str(tmp_path / "missing")])
    assert code == 6
    assert capsys.readouterr().err == (
        f"Error (cluster error): kubeconfig {tmp_path / 'missing'} does not exist\n"
        "Hint: pass --kubeconfig FILE or set KUBECONFIG to the cluster's kubeconfig\n"
    )


def test_a_context_the_kubeconfig_lacks_names_the_ones_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    write_app(tmp_path, "common")
    code = main(["status", str(tmp_path), "--kubeconfig", str(tmp_path / "kubeconfig"), "--context", "prod"])
    assert code == 6
    assert capsys.readouterr().err == (
        f"Error (cluster error): kubeconfig {tmp_path / 'kubeconfig'} has no context 'prod'; its contexts: "
        "nowhere-ctx\n"
        "Hint: pass one of them with --context (kubectl config get-contexts lists them)\n"
    )
