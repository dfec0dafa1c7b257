"""`generate` against the small fixture catalog with the real kustomize binary.

What it must guarantee: plain kustomize dirs that reproduce the rendered YAML byte for byte from any place,
deterministic output, `--check`, parameters/overlays/platform patches through kustomize features only, and
failures that leave the previous output intact.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import ConfigError, RenderError, StaleOutputError
from kfctl.render.kustomize import find_kustomize

KIND = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: {platform}
  plugins:
    - kind: KfAwsPlugin
      spec: {{clusterName: prod-eks, region: eu-west-1}}
  applications:
    - name: common
    - name: training-operator
      kustomizeConfig:
        overlays: {overlays}
        parameters:
          - {{name: gangSchedulerName, value: {gang}}}
"""


def write_kfdef(app_dir: Path, *, platform: str = "kind", overlays: str = "[]", gang: str = "volcano") -> Path:
    app_dir.mkdir(parents=True, exist_ok=True)
    path = app_dir / "kfdef.yaml"
    path.write_text(KIND.format(platform=platform, overlays=overlays, gang=gang))
    return path


def kustomize_build(directory: Path) -> str:
    k = find_kustomize()
    return subprocess.run([*k.argv, str(directory)], capture_output=True, text=True, check=True).stdout


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for top in ("kustomize", "vendor", "rendered")
        for p in (root / top).rglob("*")
        if p.is_file()
    }


def objects(app_dir: Path, app: str) -> list[dict]:
    return [d for d in yamlio.safe_load_all((app_dir / "rendered" / f"{app}.yaml").read_text()) if d]


def deployment(app_dir: Path) -> dict:
    return next(o for o in objects(app_dir, "training-operator") if o["kind"] == "Deployment")


def test_kustomize_dirs_reproduce_rendered_output_anywhere(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, overlays="[ha]"), catalog), catalog)
    assert sorted(p.name for p in (app / "rendered").iterdir()) == ["common.yaml", "training-operator.yaml"]
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(app, moved)
    shutil.rmtree(app)  # nothing may point back into the original directory
    for name in ("common", "training-operator"):
        rendered = (moved / "rendered" / f"{name}.yaml").read_text()
        assert kustomize_build(moved / "kustomize" / name) == rendered
    text = (moved / "kustomize" / "training-operator" / "kustomization.yaml").read_text()
    assert "../../vendor/manifests/training-operator" in text
    assert str(tmp_path) not in text and "site-packages" not in text


def test_generate_is_deterministic_and_check_passes(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = load_kfdef(write_kfdef(tmp_path / "demo"), catalog)
    generate(kfdef, catalog)
    first = snapshot(tmp_path / "demo")
    second_result = generate(kfdef, catalog)
    assert snapshot(tmp_path / "demo") == first
    assert second_result.changed == ()
    assert generate(kfdef, catalog, check=True).changed == ()


def test_changing_one_parameter_changes_only_that_application(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, gang="volcano"), catalog), catalog)
    before = snapshot(app)
    changed_kfdef = load_kfdef(write_kfdef(app, gang="scheduler-plugins"), catalog)
    with pytest.raises(StaleOutputError) as info:
        generate(changed_kfdef, catalog, check=True)
    stale = ["kustomize/training-operator/params.yaml", "rendered/training-operator.yaml"]
    assert info.value.details == stale
    assert info.value.exit_code == 9
    assert snapshot(app) == before  # --check writes nothing
    result = generate(changed_kfdef, catalog)
    assert list(result.changed) == stale
    args = deployment(app)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["--gang-scheduler-name=scheduler-plugins"]


def mtimes(root: Path) -> dict[str, int]:
    return {
        p.relative_to(root).as_posix(): p.lstat().st_mtime_ns
        for top in ("kustomize", "vendor", "rendered")
        for p in (root / top).rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("gang", "touched"),
    [
        pytest.param("volcano", [], id="nothing-changed"),
        pytest.param(
            "scheduler-plugins",
            ["kustomize/training-operator/params.yaml", "rendered/training-operator.yaml"],
            id="one-parameter-changed",
        ),
    ],
)
def test_generate_writes_only_the_files_whose_bytes_change(
    tmp_path: Path, catalog: Catalog, gang: str, touched: list[str]
) -> None:
    """Issue 31 item 8: an unchanged output keeps its modification time (a build or sync that goes by mtime
    sees only what changed); a changed one is rewritten."""
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, gang="volcano"), catalog), catalog)
    old = {p: t - 10**9 for p, t in mtimes(app).items()}  # a second back, so a rewrite cannot share the mtime
    for p, t in old.items():
        os.utime(app / p, ns=(t, t))
    result = generate(load_kfdef(write_kfdef(app, gang=gang), catalog), catalog)
    assert list(result.changed) == touched
    new = mtimes(app)
    assert sorted(p for p in new if new[p] != old.get(p)) == touched


def test_parameters_are_kustomize_replacements_from_a_local_config_object(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app), catalog), catalog)
    kdir = app / "kustomize" / "training-operator"
    kustomization = yaml.safe_load((kdir / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["../../vendor/manifests/training-operator", "params.yaml"]
    assert kustomization["replacements"][0]["source"] == {
        "kind": "Parameters",
        "name": "training-operator",
        "fieldPath": "data.gangSchedulerName",
    }
    params = yaml.safe_load((kdir / "params.yaml").read_text())
    assert params["data"] == {"gangSchedulerName": "volcano"}
    assert all(o["kind"] != "Parameters" for o in objects(app, "training-operator"))  # local-config dropped


def test_ha_overlay_scales_controllers_and_adds_their_pdb(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, overlays="[ha]"), catalog), catalog)
    assert deployment(app)["spec"]["replicas"] == 2
    pdbs = [o for o in objects(app, "training-operator") if o["kind"] == "PodDisruptionBudget"]
    assert [p["metadata"]["name"] for p in pdbs] == ["training-operator"]


def test_image_mirror_rewrites_every_container_and_init_container(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    path = write_kfdef(app, overlays="[image-mirror]")
    path.write_text(
        path.read_text().replace(
            "- {name: gangSchedulerName, value: volcano}",
            "- {name: imageMirrorRegistry, value: mirror.internal:5000/kf}",
        )
    )
    generate(load_kfdef(path, catalog), catalog)
    pod = deployment(app)["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["containers"]] == [
        "mirror.internal:5000/kf/kubeflow/training-v1/training-operator:v1-3f15cb8"
    ]
    assert [c["image"] for c in pod["initContainers"]] == ["mirror.internal:5000/kf/busybox:1.36"]


def test_platform_patches_and_parameters_apply(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, platform="aws"), catalog), catalog)
    dep = deployment(app)
    assert dep["metadata"]["labels"]["platform"] == "aws"
    assert dep["metadata"]["annotations"]["cluster"] == "prod-eks"


def test_missing_platform_parameter_fails_before_writing(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    path = write_kfdef(app, platform="aws")
    path.write_text(path.read_text().replace("clusterName: prod-eks, ", ""))
    with pytest.raises(ConfigError) as info:
        load_kfdef(path, catalog)
    assert info.value.details == [
        f'{path}:9:7 spec.plugins[0].spec: platform "aws" requires parameter "clusterName" in the spec of a '
        "KfAwsPlugin plugin, read by training-operator (EKS cluster name.)"
    ]
    assert not (app / "rendered").exists()


def test_no_kustomize_on_path_is_a_render_error_and_keeps_output(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app), catalog)
    generate(kfdef, catalog)
    before = snapshot(app)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(RenderError) as info:
        generate(kfdef, catalog)
    assert info.value.exit_code == 4
    assert info.value.message == "no kustomize v5+ found (neither kustomize nor kubectl is on PATH)"
    assert (info.value.hint or "").startswith("put kustomize v5 on PATH (its release binary: ")
    assert snapshot(app) == before


def test_broken_user_kustomization_names_it_and_keeps_output(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    path = write_kfdef(app)
    kfdef = load_kfdef(path, catalog)
    generate(kfdef, catalog)
    before = snapshot(app)
    mine = app / "mine" / "web"
    mine.mkdir(parents=True)
    (mine / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    path.write_text(
        path.read_text().replace("  repos: []\n", "")
        + "    - name: web\n      kustomizeConfig:\n        repoRef: {name: mine, path: web}\n"
        + "  repos:\n    - {name: mine, uri: mine}\n"
    )
    with pytest.raises(RenderError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert info.value.message == f"application web: kustomize build {app / 'kustomize' / 'web'} failed"
    assert any("missing.yaml" in d for d in info.value.details)
    assert all(".kfctl-tmp-" not in d for d in info.value.details)
    assert snapshot(app) == before
    assert not list(app.glob(".kfctl-tmp-*"))


@pytest.mark.parametrize("interrupted_at", range(1, 7))
def test_ctrl_c_between_the_renames_keeps_the_previous_output_whole(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, interrupted_at: int
) -> None:
    import kfctl.app.generate as gen

    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app), catalog), catalog)
    before = snapshot(app)
    kfdef = load_kfdef(write_kfdef(app, gang="kube-batch"), catalog)  # a change: every rename happens
    calls = 0
    real_replace = gen.os.replace

    def replace(src: Path, dst: Path) -> None:
        nonlocal calls
        calls += 1
        if calls == interrupted_at:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(gen.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        generate(kfdef, catalog)
    monkeypatch.undo()
    assert snapshot(app) == before
    assert not list(app.glob(".kfctl-tmp-*"))


def test_unwritable_app_dir_is_a_render_error_naming_it(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kfctl.app.generate as gen

    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app), catalog)

    def mkdtemp(prefix: str, dir: Path | None) -> str:
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(gen.tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(RenderError) as info:
        generate(kfdef, catalog)
    assert info.value.message == f"{app}: cannot write the generated output (Permission denied: {app})"
    assert info.value.hint == (
        "make APPDIR writable and check the free disk space, then re-run; the previous output is unchanged"
    )


def test_check_writes_nothing_into_the_app_dir(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kfctl.app.generate as gen

    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app), catalog)
    generate(kfdef, catalog)
    real_mkdtemp = gen.tempfile.mkdtemp
    used: list[object] = []

    def mkdtemp(prefix: str, dir: Path | None = None) -> str:
        used.append(dir)
        return real_mkdtemp(prefix=prefix, dir=dir)

    monkeypatch.setattr(gen.tempfile, "mkdtemp", mkdtemp)
    assert generate(kfdef, catalog, check=True).changed == ()
    assert used == [None, None]  # where what the cache lacks is fetched, and the render: both in the temp dir


KUSTOMIZE_ERRORS = [
    (
        "kustomize-binary",
        ["# Warning: 'vars' is deprecated.", "Error: accumulating resources: 'missing.yaml': no such file"],
        ["Error: accumulating resources: 'missing.yaml': no such file"],
    ),
    (
        "kubectl-one-line",
        ['"command failed" err="accumulating resources: lstat /x/missing.yaml: no such file or directory"'],
        ["accumulating resources: lstat /x/missing.yaml: no such file or directory"],
    ),
    (
        # kfctl_azure.v1.2.0.yaml against the v1.2.0 tree: the node kustomize looked at comes after the cause.
        "kubectl-multi-line-cause-before-its-node",
        [
            '"command failed" err=<',
            "\tconsidering field 'spec/template/spec/containers/0/args/1' of object Deployment: wrong node kind",
            "\timage: gcr.io/kubeflow-images-public/admission-webhook:vmaster-ge5452b6f",
            "\t- --tlsKeyFile=/etc/webhook/certs/tls.key",
            " >",
        ],
        [
            "considering field 'spec/template/spec/containers/0/args/1' of object Deployment: wrong node kind",
            "\timage: gcr.io/kubeflow-images-public/admission-webhook:vmaster-ge5452b6f",
            "\t- --tlsKeyFile=/etc/webhook/certs/tls.key",
            " >",
        ],
    ),
    ("no-cause-found", ["something", "else"], ["something", "else"]),
]


@pytest.mark.parametrize(("lines", "expected"), [c[1:] for c in KUSTOMIZE_ERRORS], ids=[c[0] for c in KUSTOMIZE_ERRORS])
def test_kustomize_error_line_comes_first(lines: list[str], expected: list[str]) -> None:
    from kfctl.render.kustomize import error_first

    assert error_first(lines) == expected


def test_the_tree_kustomize_refused_is_kept_with_the_command_that_shows_the_error(
    tmp_path: Path, catalog: Catalog
) -> None:
    import shlex
    import shutil
    import subprocess

    app = tmp_path / "demo"
    path = write_kfdef(app)
    (app / "mine" / "web").mkdir(parents=True)
    (app / "mine" / "web" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    path.write_text(
        path.read_text().replace("  repos: []\n", "")
        + "    - name: web\n      kustomizeConfig:\n        repoRef: {name: mine, path: web}\n"
        + "  repos:\n    - {name: mine, uri: mine}\n"
    )
    with pytest.raises(RenderError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert "missing.yaml" in info.value.details[0] and "no such file" in info.value.details[0]
    assert info.value.hint is not None
    command = info.value.hint.split("`")[1]
    kept = Path(shlex.split(command)[-1]).parents[1]
    try:
        assert kept.name.startswith("kfctl-failed-web-") and not kept.is_relative_to(app)
        again = subprocess.run(shlex.split(command), capture_output=True, text=True, check=False)
        assert again.returncode != 0 and "missing.yaml" in again.stderr
    finally:
        shutil.rmtree(kept)
