"""A repo holding only a KfDef, rendered by Argo CD's kfctl plugin (kfctl.app.argocd_plugin): what
`kfctl generate --stdout` prints (every object once, each with its part's sync wave, in wave order) and what
`kfctl export --format argocd-plugin` writes (the plugin's ConfigMap, the Application, the repo-server's patch).
Small applications in, the exact objects, waves and files out; the real Argo CD runs it in e2e."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_gitops_parts import CONFIG, CRD, DEPLOYMENT, SERVICE, app_dir, webhook, widget

from kfctl.app.argocd_plugin import export_plugin, plugin_config, waved_objects
from kfctl.app.export import SYNC_WAVE, ExportOptions, write_files
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.errors import UsageError

OPTIONS = ExportOptions(format="argocd-plugin", repo_url="http://git.example/platform.git", path="clusters/prod")


def waves(objects: tuple[dict[str, Any], ...]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["metadata"]["name"], o["metadata"]["annotations"][SYNC_WAVE]) for o in objects]


def test_objects_carry_their_parts_wave_in_wave_order(tmp_path: Path, catalog: Catalog) -> None:
    labelled = {**CONFIG, "metadata": {**CONFIG["metadata"], "annotations": {"note": "kept"}}}
    kfdef = app_dir(
        tmp_path,
        {"op": [CRD, labelled, SERVICE, DEPLOYMENT, webhook("Fail"), widget("builtin")], "user": [widget("users")]},
        catalog,
    )
    objects = waved_objects(kfdef, catalog)
    assert waves(objects) == [
        ("CustomResourceDefinition", "widgets.example.com", "0"),
        ("ConfigMap", "op-config", "0"),
        ("Service", "op-webhook", "0"),
        ("Deployment", "op", "0"),
        ("ValidatingWebhookConfiguration", "op-validator", "0"),
        ("Widget", "builtin", "1"),  # op's own webhook admits it: after op's backend (the part op-admitted)
        ("Widget", "users", "2"),  # user depends on op
    ]
    assert objects[1]["metadata"]["annotations"] == {"note": "kept", SYNC_WAVE: "0"}
    assert "annotations" not in CONFIG["metadata"]  # copies: the rendered objects are not changed


def test_export_writes_the_plugin_the_application_and_the_repo_servers_patch(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = app_dir(tmp_path, {"op": [CONFIG], "user": []}, catalog)
    result = export_plugin(kfdef, OPTIONS, "registry.example/kfctl:1.0")
    files, removed = write_files(kfdef, result, tmp_path / "argocd")
    assert (files, removed) == (
        [
            "application-demo.yaml",
            "argocd-cm.yaml",
            "argocd-repo-server-patch.yaml",
            "configmap-kfctl-cmp-plugin.yaml",
            "kustomization.yaml",
        ],
        [],
    )
    kustomization = yaml.safe_load((tmp_path / "argocd" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["application-demo.yaml", "configmap-kfctl-cmp-plugin.yaml"]
    app = yaml.safe_load((tmp_path / "argocd" / "application-demo.yaml").read_text())
    assert app["spec"]["source"] == {
        "repoURL": "http://git.example/platform.git",
        "targetRevision": "main",
        "path": "clusters/prod",
        "plugin": {"name": "kfctl"},
    }
    # Argo CD's own diff showed quantities such as `cpu: 2000m` OutOfSync for ever: the API server's diff instead.
    assert app["metadata"]["annotations"]["argocd.argoproj.io/compare-options"] == "ServerSideDiff=true"
    assert app["spec"]["syncPolicy"]["automated"] == {}  # what Argo CD writes back: no selfHeal: false
    assert app["spec"]["syncPolicy"]["syncOptions"] == [
        "ServerSideApply=true",
        "SkipDryRunOnMissingResource=true",
        "RespectIgnoreDifferences=true",
        "ApplyOutOfSyncOnly=true",
    ]
    assert [d["kind"] for d in app["spec"]["ignoreDifferences"]] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "CustomResourceDefinition",
        "APIService",
        "ClusterRole",
    ]
    configmap = yaml.safe_load((tmp_path / "argocd" / "configmap-kfctl-cmp-plugin.yaml").read_text())
    assert yaml.safe_load(configmap["data"]["plugin.yaml"]) == plugin_config()
    patch = yaml.safe_load((tmp_path / "argocd" / "argocd-repo-server-patch.yaml").read_text())
    (sidecar,) = patch["spec"]["template"]["spec"]["containers"]
    assert (sidecar["name"], sidecar["image"], sidecar["command"]) == (
        "kfctl",
        "registry.example/kfctl:1.0",
        ["/var/run/argocd/argocd-cmp-server"],
    )
    assert {m["mountPath"] for m in sidecar["volumeMounts"]} >= {
        "/var/run/argocd",
        "/home/argocd/cmp-server/plugins",
        "/home/argocd/cmp-server/config/plugin.yaml",
    }


@pytest.mark.parametrize(
    ("mirrors", "argv"),
    [
        ("", ["kfctl", "generate", ".", "--stdout"]),
        (
            "https://github.com/=http://mirror/gh/",
            ["kfctl", "generate", ".", "--stdout", "--mirror", "https://github.com/=http://mirror/gh/"],
        ),
        ("a=/m/a  b=/m/b", ["kfctl", "generate", ".", "--stdout", "--mirror", "a=/m/a", "--mirror", "b=/m/b"]),
    ],
)
def test_the_plugins_generate_passes_each_mirror_of_its_env(tmp_path: Path, mirrors: str, argv: list[str]) -> None:
    """The generate command, run by sh as argocd-cmp-server runs it, with `kfctl` a script printing its argv."""
    fake = tmp_path / "bin" / "kfctl"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor a in kfctl "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    command = plugin_config()["spec"]["generate"]["command"]
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "ARGOCD_ENV_KFCTL_MIRRORS": mirrors}
    out = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == argv


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["export", "{app}", "--format", "argocd-plugin", "--repo-url", "u"],
            "Error (usage error): --format argocd-plugin needs --plugin-image: the sidecar's image, holding kfctl and "
            "kustomize",
        ),
        (
            ["export", "{app}", "--format", "argocd", "--repo-url", "u", "--plugin-image", "i"],
            "Error (usage error): --plugin-image goes with --format argocd-plugin",
        ),
        (
            ["generate", "{app}", "--stdout", "--check"],
            "Error (usage error): --stdout prints the objects as YAML; it goes without --check and -o json/yaml",
        ),
    ],
)
def test_usage_errors(
    tmp_path: Path, catalog: Catalog, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    app_dir(tmp_path, {"op": [CONFIG], "user": []}, catalog)
    assert main([a.replace("{app}", str(tmp_path)) for a in argv]) == 2
    captured = capsys.readouterr()
    assert (captured.out or captured.err).splitlines()[0] == message
    assert not (tmp_path / "argocd").exists()


def test_stdout_is_no_json_result(tmp_path: Path, catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir(tmp_path, {"op": [CONFIG], "user": []}, catalog)
    assert main(["-o", "json", "generate", str(tmp_path), "--stdout"]) == 2
    error = json.loads(capsys.readouterr().err)["error"]
    assert error["message"] == "--stdout prints the objects as YAML; it goes without --check and -o json/yaml"


def test_export_plugin_without_an_image_is_a_usage_error(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = app_dir(tmp_path, {"op": [CONFIG], "user": []}, catalog)
    with pytest.raises(UsageError, match="needs --plugin-image"):
        export_plugin(kfdef, OPTIONS, " ")
