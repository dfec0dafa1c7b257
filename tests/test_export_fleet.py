"""`kfctl export --format argocd --fleet SELECTOR`: the exact ApplicationSet of app-of-apps, the children's
parameter patch a cluster's annotation replaces, and every bad input with its message and exit code.

What Argo CD makes of the ApplicationSet (its Go templates, kustomize's patches) is checked on the real
controllers by e2e/test_gitops_argocd_fleet.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kfctl.app import argocd_fleet
from kfctl.app.export import ExportOptions, export
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.config.model import KfDef
from kfctl.errors import UsageError

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: kind
  applications:
    - name: common
    - name: training-operator
      kustomizeConfig:
        parameters:
          - {name: gangSchedulerName, value: volcano}
          - {name: replicas, value: 2}
"""
# What `kfctl generate` writes for those parameters (kfctl.render.layout): the fleet reads the values there.
PARAMS = """\
apiVersion: kfctl.kubeflow.org/v1alpha1
kind: Parameters
metadata:
  name: training-operator
  annotations:
    config.kubernetes.io/local-config: 'true'
data:
  gangSchedulerName: volcano
  replicas: 2
"""
REPO = "https://git.example/p.git"
LABELS = {"app.kubernetes.io/managed-by": "kfctl", "app.kubernetes.io/part-of": "demo"}


@pytest.fixture
def kfdef(tmp_path: Path, catalog: Catalog) -> KfDef:
    """The app directory at clusters/demo of a working copy at tmp_path."""
    app_dir = tmp_path / "clusters" / "demo"
    (app_dir / "kustomize" / "training-operator").mkdir(parents=True)
    (app_dir / "kustomize" / "training-operator" / "params.yaml").write_text(PARAMS)
    (app_dir / "kfdef.yaml").write_text(KFDEF)
    return load_kfdef(app_dir / "kfdef.yaml", catalog)


def fleet_options(**change: Any) -> ExportOptions:
    fields: dict[str, Any] = {
        "format": "argocd",
        "repo_url": REPO,
        "path": "clusters/demo",
        "fleet": "kubeflow.org/fleet=prod",
        "fleet_parameters": ("training-operator.gangSchedulerName",),
        "fleet_path": "argocd/demo",
    }
    return ExportOptions(**(fields | change))


def applicationset_of(files: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    text = dict(files)[argocd_fleet.FLEET_FILE]
    docs = list(yaml.safe_load_all(text))
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


def test_the_applicationset_makes_one_parent_per_selected_cluster_of_the_export_directory(
    kfdef: KfDef, catalog: Catalog
) -> None:
    result = export(kfdef, catalog, fleet_options())
    parameter_patch = (
        '{{- $a := .metadata.annotations | default (dict) -}}[{"op":"replace","path":'
        '"/spec/source/kustomize/patches/0/patch","value":{{ list (dict "op" "replace" "path" '
        '"/data/gangSchedulerName" "value" (index $a "kfctl.kubeflow.org/training-operator.gangSchedulerName" '
        '| default "volcano")) | toJson | toJson }}}]'
    )
    assert applicationset_of(result.files) == {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "demo", "namespace": "argocd", "labels": LABELS},
        "spec": {
            "goTemplate": True,
            "generators": [{"clusters": {"selector": {"matchLabels": {"kubeflow.org/fleet": "prod"}}}}],
            "template": {
                "metadata": {
                    "name": "{{ .nameNormalized }}-demo",
                    "labels": LABELS,
                    "finalizers": ["resources-finalizer.argocd.argoproj.io"],
                },
                "spec": {
                    "project": "default",
                    "source": {
                        "repoURL": REPO,
                        "targetRevision": "main",
                        "path": "argocd/demo",
                        "kustomize": {
                            "namePrefix": "{{ .nameNormalized }}-",
                            "patches": [
                                {
                                    "target": {"group": "argoproj.io", "kind": "Application"},
                                    "patch": '[{"op":"replace","path":"/spec/destination/server",'
                                    '"value":{{ .server | toJson }}}]',
                                },
                                {
                                    "target": {
                                        "group": "argoproj.io",
                                        "kind": "Application",
                                        "labelSelector": "kfctl.kubeflow.org/application=training-operator",
                                    },
                                    "patch": parameter_patch,
                                },
                            ],
                        },
                    },
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "argocd"},
                    "syncPolicy": {
                        "automated": {"prune": True},
                        "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
                    },
                },
            },
        },
    }
    assert [name for name, _ in result.files] == ["argocd-cm.yaml", "applicationset.yaml"]


def test_each_child_of_a_fleet_parameters_application_sets_the_kfdefs_value_first(
    kfdef: KfDef, catalog: Catalog
) -> None:
    """The patch the parent replaces, as Go's json.Marshal writes what the parent renders for a cluster without
    the annotation: the child in git builds what it builds for one cluster."""
    objects = {o["metadata"]["name"]: o for o in export(kfdef, catalog, fleet_options()).objects}
    assert objects["demo-training-operator"]["spec"]["source"]["kustomize"] == {
        "patches": [
            {
                "target": {"group": "kfctl.kubeflow.org", "kind": "Parameters", "name": "training-operator"},
                "patch": '[{"op":"replace","path":"/data/gangSchedulerName","value":"volcano"}]',
            }
        ]
    }
    assert "kustomize" not in objects["demo-common"]["spec"]["source"]
    # Without --fleet the same export has no such patch and no applicationset.yaml.
    plain = export(kfdef, catalog, ExportOptions(format="argocd", repo_url=REPO, path="clusters/demo"))
    assert all("kustomize" not in o["spec"]["source"] for o in plain.objects)
    assert [name for name, _ in plain.files] == ["argocd-cm.yaml"]


def test_several_parameters_of_one_application_are_one_patch_in_name_order() -> None:
    params = [
        argocd_fleet.FleetParameter("kserve", "controllerCpuRequest", "100m"),
        argocd_fleet.FleetParameter("kserve", "controllerMemoryRequest", "256Mi"),
    ]
    patch = argocd_fleet.parameter_patch(params)
    assert json.loads(patch["patch"]) == [
        {"op": "replace", "path": "/data/controllerCpuRequest", "value": "100m"},
        {"op": "replace", "path": "/data/controllerMemoryRequest", "value": "256Mi"},
    ]
    assert [p.annotation for p in params] == [
        "kfctl.kubeflow.org/kserve.controllerCpuRequest",
        "kfctl.kubeflow.org/kserve.controllerMemoryRequest",
    ]


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("env=prod", {"env": "prod"}),
        ("kubeflow.org/fleet=prod, region=eu-1", {"kubeflow.org/fleet": "prod", "region": "eu-1"}),
        ("gpu=", {"gpu": ""}),
    ],
)
def test_selector_forms(text: str, labels: dict[str, str]) -> None:
    assert argocd_fleet.parse_selector(text) == labels


FORM = "expected key=value[,key=value], labels of Argo CD's cluster Secrets"


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("env", f"--fleet 'env': 'env' is not key=value; {FORM}"),
        ("=prod", f"--fleet '=prod': '=prod' is not key=value; {FORM}"),
        ("env=prod,", f"--fleet 'env=prod,': '' is not key=value; {FORM}"),
        (
            "env prod=1",
            f"--fleet 'env prod=1': 'env prod' is not a label key ([prefix/]name, the name 63 characters at most); "
            f"{FORM}",
        ),
        (
            "Bad_Prefix/x=1",
            f"--fleet 'Bad_Prefix/x=1': 'Bad_Prefix/x' is not a label key ([prefix/]name, the name 63 characters at "
            f"most); {FORM}",
        ),
        (
            "env=a/b",
            f"--fleet 'env=a/b': 'a/b' is not a label value (63 characters at most: letters, digits, '-', '_', '.'); "
            f"{FORM}",
        ),
        ("env=a,env=b", f"--fleet 'env=a,env=b': 'env' is given twice; {FORM}"),
    ],
)
def test_a_malformed_selector_is_a_usage_error_naming_the_option_and_the_form(
    kfdef: KfDef, catalog: Catalog, selector: str, message: str
) -> None:
    with pytest.raises(UsageError) as info:
        export(kfdef, catalog, fleet_options(fleet=selector))
    assert info.value.message == message
    assert info.value.hint == "e.g. --fleet kubeflow.org/fleet=prod or --fleet env=prod,region=eu"
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"format": "flux"},
            "--fleet goes with --format argocd (an Argo CD ApplicationSet of the app-of-apps), not --format flux",
        ),
        (
            {"fleet": None},
            "--fleet-parameter goes with --fleet SELECTOR (a parameter that differs across the fleet)",
        ),
        (
            {"fleet_parameters": ("training-operator",)},
            "--fleet-parameter 'training-operator': expected APPLICATION.PARAMETER, e.g. kserve.controllerCpuRequest",
        ),
        (
            {"fleet_parameters": ("katib.x",)},
            "--fleet-parameter katib.x: no installed application 'katib' in kfdef.yaml",
        ),
        (
            {"fleet_parameters": ("common.x",)},
            "--fleet-parameter common.x: kustomize/common/params.yaml sets no x",
        ),
        (
            {"fleet_parameters": ("training-operator.enableMetrics",)},
            "--fleet-parameter training-operator.enableMetrics: kustomize/training-operator/params.yaml sets no "
            "enableMetrics",
        ),
        (
            {"fleet_parameters": ("training-operator.replicas",)},
            "--fleet-parameter training-operator.replicas: only a string parameter can come from a cluster's "
            "annotation; replicas is 2 (int)",
        ),
    ],
)
def test_fleet_option_errors(kfdef: KfDef, catalog: Catalog, change: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as info:
        export(kfdef, catalog, fleet_options(**change))
    assert info.value.message == message


def test_an_unset_parameter_says_where_to_set_it(kfdef: KfDef, catalog: Catalog) -> None:
    with pytest.raises(UsageError) as info:
        export(kfdef, catalog, fleet_options(fleet_parameters=("common.x",)))
    assert info.value.hint == (
        "set x in the KfDef's application common (kustomizeConfig.parameters) and run `kfctl generate`: its value "
        "is what a cluster without the annotation gets"
    )


def test_the_parents_path_is_the_output_directory_in_the_repository(tmp_path: Path) -> None:
    app_dir = tmp_path / "clusters" / "demo"
    assert argocd_fleet.source_path(app_dir, "clusters/demo", tmp_path / "argocd" / "demo") == "argocd/demo"
    assert argocd_fleet.source_path(app_dir, ".", app_dir / "argocd") == "argocd"


@pytest.mark.parametrize(
    ("path", "output", "message"),
    [
        (
            "clusters/demo",
            None,
            "--fleet writes applicationset.yaml beside the Applications: give --output-dir, a directory inside the "
            "repository that holds the app directory",
        ),
        (
            "clusters/prod",
            "argocd",
            "--path 'clusters/prod' is not where {app} sits in its repository: the app directory must end in it",
        ),
        (
            "clusters/demo",
            "../elsewhere",
            "--output-dir {root}/../elsewhere is not inside the repository {root} (the app directory less --path "
            "'clusters/demo'), where the ApplicationSet's parents read it",
        ),
        (
            "clusters/demo",
            ".",
            "--output-dir {root} is not inside the repository {root} (the app directory less --path "
            "'clusters/demo'), where the ApplicationSet's parents read it",
        ),
    ],
)
def test_the_output_directory_must_be_in_the_repository(
    tmp_path: Path, path: str, output: str | None, message: str
) -> None:
    root = tmp_path / "repo"
    app = root / "clusters" / "demo"
    app.mkdir(parents=True)
    with pytest.raises(UsageError) as info:
        argocd_fleet.source_path(app, path, None if output is None else root / output)
    assert info.value.message == message.format(app=app, root=root)


def test_cli_writes_the_applicationset_and_refuses_a_bad_selector_with_exit_2(
    kfdef: KfDef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI reads the real catalog: its training-operator has gangSchedulerName, not the fixture's replicas.
    kfdef.path.write_text(KFDEF.replace("          - {name: replicas, value: 2}\n", ""))
    base = ["export", str(kfdef.app_dir), "--format", "argocd", "--repo-url", REPO, "--path", "clusters/demo"]
    out = tmp_path / "argocd" / "demo"
    assert main([*base, "--output-dir", str(out), "--fleet", "kubeflow.org/fleet=prod"]) == 0
    assert "Wrote 5 file(s)" in capsys.readouterr().out
    written = yaml.safe_load_all((out / "applicationset.yaml").read_text())
    (appset,) = written
    assert appset["spec"]["template"]["spec"]["source"]["path"] == "argocd/demo"
    assert "applicationset.yaml" not in (out / "kustomization.yaml").read_text()  # the parents must not apply it
    assert main([*base, "--output-dir", str(out), "--fleet", "fleet"]) == 2
    err = capsys.readouterr().err
    assert "--fleet 'fleet': 'fleet' is not key=value; expected key=value[,key=value]" in err
    assert main([*base, "--fleet", "a=b"]) == 2
    assert "--fleet writes applicationset.yaml beside the Applications: give --output-dir" in capsys.readouterr().err
    assert main([*base[:3], "flux", *base[4:], "--fleet", "a=b"]) == 2
    assert "--fleet goes with --format argocd" in capsys.readouterr().err
