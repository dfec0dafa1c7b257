"""Foreign layouts: an application may point at any kustomization inside a repo laid out like upstream
kubeflow/manifests, and kfctl wraps it like its own catalog: cross-cutting overlays apply, parameters are
accepted only where an overlay declares them, and the tree's own parameters (configMapGenerator,
replacements) keep working because kustomize, not kfctl, evaluates them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import ConfigError

APP_PATH = "applications/training-operator/upstream/overlays/kubeflow"
KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: generic
  repos:
    - {{name: upstream, uri: ./upstream}}
  applications:
    - name: training-operator
      kustomizeConfig:
        repoRef: {{name: upstream, path: {path}}}
{extra}"""


def upstream_tree(root: Path) -> None:
    base = root / "applications/training-operator/upstream/base"
    overlay = root / APP_PATH
    base.mkdir(parents=True)
    overlay.mkdir(parents=True)
    (base / "kustomization.yaml").write_text("resources: [deployment.yaml]\n")
    (base / "deployment.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "training-operator", "labels": {"kfctl.kubeflow.org/scalable": "true"}},
                "spec": {
                    "selector": {"matchLabels": {"app": "t"}},
                    "template": {
                        "metadata": {"labels": {"app": "t"}},
                        "spec": {"containers": [{"name": "m", "image": "docker.io/kubeflow/training-operator:v1"}]},
                    },
                },
            }
        )
    )
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "namespace": "kubeflow",
                "resources": ["../../base"],
                "configMapGenerator": [{"name": "training-operator-params", "envs": ["params.env"]}],
                "replacements": [
                    {
                        "source": {"kind": "ConfigMap", "name": "training-operator-params", "fieldPath": "data.GANG"},
                        "targets": [
                            {
                                "select": {"kind": "Deployment", "name": "training-operator"},
                                "fieldPaths": ["metadata.annotations.gang"],
                                "options": {"create": True},
                            }
                        ],
                    }
                ],
            }
        )
    )
    (overlay / "params.env").write_text("GANG=volcano\n")


def write(app: Path, *, extra: str = "", path: str = APP_PATH) -> Path:
    app.mkdir(parents=True, exist_ok=True)
    upstream_tree(app / "upstream")
    kfdef = app / "kfdef.yaml"
    kfdef.write_text(KFDEF.format(path=path, extra=extra))
    return kfdef


def rendered(app: Path) -> list[dict]:
    return [d for d in yamlio.safe_load_all((app / "rendered" / "training-operator.yaml").read_text()) if d]


def test_foreign_overlay_renders_with_its_own_params_and_catalog_overlays(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    extra = (
        "        overlays: [ha, image-mirror]\n"
        "        parameters:\n"
        "          - {name: imageMirrorRegistry, value: mirror.example:5000/kf}\n"
    )
    generate(load_kfdef(write(app, extra=extra), catalog), catalog)
    objs = {o["kind"]: o for o in rendered(app)}
    deploy = objs["Deployment"]
    assert deploy["metadata"]["namespace"] == "kubeflow"
    assert deploy["metadata"]["annotations"] == {"gang": "volcano"}  # the tree's own parameter
    assert deploy["spec"]["replicas"] == 2  # the catalog's ha overlay
    assert (
        deploy["spec"]["template"]["spec"]["containers"][0]["image"]
        == "mirror.example:5000/kf/kubeflow/training-operator:v1"
    )
    assert objs["ConfigMap"]["data"] == {"GANG": "volcano"}
    kustomization = yaml.safe_load((app / "kustomize" / "training-operator" / "kustomization.yaml").read_text())
    assert kustomization["resources"][0] == f"../../vendor/repos/upstream/{APP_PATH}"
    assert kustomization["components"] == ["../../vendor/overlays/ha"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            "        overlays: [image-mirror]\n        parameters:\n          - {name: imageMirrorRegistry, value: m}\n"
            "          - {name: imageMirror, value: x}\n",
            "spec.applications[0].kustomizeConfig.parameters[1].name: this application has no parameter "
            '"imageMirror" (did you mean "imageMirrorRegistry"?)',
            id="a-misspelt-overlay-parameter",
        ),
    ],
)
def test_a_misspelt_overlay_parameter_is_still_an_error(
    tmp_path: Path, catalog: Catalog, extra: str, message: str
) -> None:
    """Any other name is kfctl v1.0's params.env entry (tests/test_legacy_kfdef.py); one close to a catalog
    overlay's parameter is a typo, and said so."""
    path = write(tmp_path / "demo", extra=extra)
    with pytest.raises(ConfigError) as info:
        load_kfdef(path, catalog)
    assert [d.split(" ", 1)[1] for d in info.value.details] == [message]


def test_a_missing_path_inside_the_repo_is_a_config_error_naming_it_before_kustomize_runs(
    tmp_path: Path, catalog: Catalog
) -> None:
    app = tmp_path / "demo"
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(write(app, path="applications/nope"), catalog), catalog)
    assert info.value.message.startswith(
        'application training-operator: path "applications/nope" does not exist in repo upstream'
    )
    assert info.value.hint == (
        "fix kfdef.yaml: spec.applications[training-operator].kustomizeConfig.repoRef.path "
        "(a directory of the repo holding a kustomization.yaml)"
    )
    assert not (app / "kustomize").exists()  # nothing was written
