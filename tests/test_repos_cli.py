"""`kfctl generate --offline/--refresh` through the CLI: flag conflicts, exit codes and the JSON result."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from kfctl.cli.main import main

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: generic
  repos:
    - {{name: web, uri: {uri}}}
  applications:
    - name: web
      kustomizeConfig:
        repoRef: {{name: web, path: web}}
"""


def app_with_local_archive(tmp_path: Path) -> Path:
    src = tmp_path / "src" / "web"
    src.mkdir(parents=True)
    (src / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (src / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\n")
    with tarfile.open(tmp_path / "web.tgz", "w:gz") as tf:
        tf.add(src, arcname="web")
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KFDEF.format(uri=f"file://{tmp_path / 'web.tgz'}"))
    return app


def test_offline_and_refresh_together_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = app_with_local_archive(tmp_path)
    assert main(["generate", str(app), "--offline", "--refresh"]) == 2
    assert capsys.readouterr().err == (
        "Error (usage error): --offline and --refresh contradict each other: refreshing needs the network\n"
    )


def test_json_result_reports_fetches_and_the_lock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = app_with_local_archive(tmp_path)
    assert main(["generate", str(app), "-o", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["fetched"], first["lockWritten"]) == (["web"], True)
    assert main(["generate", str(app), "--offline", "-o", "json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert (second["fetched"], second["lockWritten"], second["changed"]) == ([], False, [])
    assert main(["generate", str(app)]) == 0
    assert "Fetched" not in capsys.readouterr().out


def test_offline_miss_exits_3_with_the_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KFDEF.format(uri="git+https://127.0.0.1:9/org/m.git"))
    assert main(["generate", str(app), "--offline"]) == 3
    assert capsys.readouterr().err == (
        'Error (config error): repo "web" (git+https://127.0.0.1:9/org/m.git) is not in the lock file, and '
        "--offline forbids fetching it\n"
        "Hint: run `kfctl generate` once without --offline (with network) to fill the cache and write the lock file\n"
    )
