"""`kfctl export`: Argo CD / Flux objects whose order follows the component graph of the real catalog,
exact output for a small KfDef, cycles as plan errors, option checks, and the files it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kfctl import yamlio
from kfctl.app import argocd_settings
from kfctl.app.export import ExportOptions, application_dependencies, export, sync_waves, write_files
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.config.model import KfDef
from kfctl.errors import PlanError, UsageError

FULL = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: prod
spec:
  platform: kind
  repos:
    - {name: mine, uri: ./mine}
  applications:
    - name: kserve
    - name: katib
    - name: common
    - name: notebook-controller
    - name: cert-manager
    - name: training-operator
    - name: my-app
      dependsOn: [katib]
      kustomizeConfig:
        repoRef: {name: mine, path: apps/my-app}
    - name: pipelines
      enabled: false
"""
SMALL = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: kind
  applications:
    - name: common
    - name: training-operator
"""


def kfdef_from(tmp_path: Path, text: str, catalog: Catalog) -> KfDef:
    (tmp_path / "mine" / "apps" / "my-app").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "kfdef.yaml"
    path.write_text(text)
    return load_kfdef(path, catalog)


def test_waves_and_depends_on_follow_the_real_catalog(tmp_path: Path, real_catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, FULL, real_catalog)
    deps = application_dependencies(kfdef, real_catalog)
    assert deps == {
        "cert-manager": (),
        "common": (),
        "katib": ("cert-manager", "common", "training-operator"),
        "kserve": ("cert-manager", "common"),
        "my-app": ("katib",),
        "notebook-controller": ("common",),
        "training-operator": ("common",),
    }
    waves = sync_waves(deps)
    assert waves == {
        "cert-manager": 0,
        "common": 0,
        "katib": 2,
        "kserve": 1,
        "my-app": 3,
        "notebook-controller": 1,
        "training-operator": 1,
    }
    argo = export(kfdef, real_catalog, ExportOptions(format="argocd", repo_url="https://git.example/p.git"))
    wave_of = {
        o["metadata"]["name"]: int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for o in argo.objects
    }
    assert wave_of["prod-cert-manager"] < wave_of["prod-kserve"]
    assert wave_of["prod-cert-manager"] < wave_of["prod-katib"]
    assert wave_of["prod-training-operator"] < wave_of["prod-katib"]
    # Every edge goes to a strictly earlier wave.
    for app, needs in deps.items():
        for dep in needs:
            assert wave_of[f"prod-{dep}"] < wave_of[f"prod-{app}"], (app, dep)
    flux = export(kfdef, real_catalog, ExportOptions(format="flux", repo_url="https://git.example/p.git"))
    depends = {
        o["metadata"]["name"]: [d["name"] for d in o["spec"].get("dependsOn", [])]
        for o in flux.objects
        if o["kind"] == "Kustomization"
    }
    assert depends["prod-katib"] == ["prod-cert-manager", "prod-common", "prod-training-operator"]
    assert depends["prod-kserve"] == ["prod-cert-manager", "prod-common"]
    assert depends["prod-my-app"] == ["prod-katib"]
    assert "prod-pipelines" not in depends  # disabled applications are not exported


def test_argocd_output_is_exact(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    result = export(
        kfdef, catalog, ExportOptions(format="argocd", repo_url="https://git.example/p.git", path="clusters/prod")
    )
    assert yaml.safe_dump(list(result.objects), sort_keys=False) == yaml.safe_dump(
        [
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                "metadata": {
                    "name": f"demo-{app}",
                    "namespace": "argocd",
                    "labels": {
                        "app.kubernetes.io/managed-by": "kfctl",
                        "app.kubernetes.io/part-of": "demo",
                        "kfctl.kubeflow.org/application": app,
                    },
                    "annotations": {
                        "argocd.argoproj.io/sync-wave": wave,
                        "argocd.argoproj.io/compare-options": "ServerSideDiff=true",
                    },
                },
                "spec": {
                    "project": "default",
                    "source": {
                        "repoURL": "https://git.example/p.git",
                        "targetRevision": "main",
                        "path": f"clusters/prod/kustomize/{app}",
                    },
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "kubeflow"},
                    "syncPolicy": {
                        "automated": {},
                        "syncOptions": [
                            "ServerSideApply=true",
                            "SkipDryRunOnMissingResource=true",
                            "RespectIgnoreDifferences=true",
                            "ApplyOutOfSyncOnly=true",
                        ],
                        "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
                    },
                },
            }
            for app, wave in (("common", "0"), ("training-operator", "1"))
        ],
        sort_keys=False,
    )
    assert result.missing == ("common", "training-operator")


def test_flux_output_is_exact(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    opts = ExportOptions(
        format="flux", repo_url="ssh://git@git.example/p.git", revision="refs/tags/v1.2.0", prune=True, interval="5m"
    )
    objects = export(kfdef, catalog, opts).objects
    labels = {"app.kubernetes.io/managed-by": "kfctl", "app.kubernetes.io/part-of": "demo"}
    assert list(objects) == [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "demo", "namespace": "flux-system", "labels": labels},
            "spec": {"interval": "5m", "url": "ssh://git@git.example/p.git", "ref": {"tag": "v1.2.0"}},
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {
                "name": "demo-common",
                "namespace": "flux-system",
                "labels": {**labels, "kfctl.kubeflow.org/application": "common"},
            },
            "spec": {
                "interval": "5m",
                "path": "./kustomize/common",
                "prune": True,
                "wait": True,
                "timeout": "10m",
                "retryInterval": "1m",
                "sourceRef": {"kind": "GitRepository", "name": "demo"},
                "patches": FLUX_KEEP_PATCHES,
            },
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {
                "name": "demo-training-operator",
                "namespace": "flux-system",
                "labels": {**labels, "kfctl.kubeflow.org/application": "training-operator"},
            },
            "spec": {
                "interval": "5m",
                "path": "./kustomize/training-operator",
                "prune": True,
                "wait": True,
                "timeout": "10m",
                "retryInterval": "1m",
                "sourceRef": {"kind": "GitRepository", "name": "demo"},
                "dependsOn": [{"name": "demo-common"}],
                "patches": FLUX_KEEP_PATCHES,
            },
        },
    ]


def keep(api_version: str, kind: str, annotation: str) -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: any\n  annotations:\n    {annotation}\n"


# With --prune, what kfctl's own prune keeps unless told (CRDs, Namespaces, PVs, PVCs) the engine is told to keep.
FLUX_KEEP_PATCHES = [
    {
        "patch": keep(
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", "kustomize.toolkit.fluxcd.io/prune: disabled"
        ),
        "target": {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"},
    },
    {"patch": keep("v1", "Namespace", "kustomize.toolkit.fluxcd.io/prune: disabled"), "target": {"kind": "Namespace"}},
    {
        "patch": keep("v1", "PersistentVolume", "kustomize.toolkit.fluxcd.io/prune: disabled"),
        "target": {"kind": "PersistentVolume"},
    },
    {
        "patch": keep("v1", "PersistentVolumeClaim", "kustomize.toolkit.fluxcd.io/prune: disabled"),
        "target": {"kind": "PersistentVolumeClaim"},
    },
]


def test_argocd_with_prune_keeps_what_kfctl_keeps_and_deletes_the_rest_with_the_application(
    tmp_path: Path, catalog: Catalog
) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    app = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u", prune=True)).objects[0]
    assert app["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True}
    sync_options = "argocd.argoproj.io/sync-options: Prune=false,Delete=false"
    assert app["spec"]["source"]["kustomize"] == {
        "patches": [
            {
                "patch": keep("apiextensions.k8s.io/v1", "CustomResourceDefinition", sync_options),
                "target": {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"},
            },
            {"patch": keep("v1", "Namespace", sync_options), "target": {"kind": "Namespace"}},
            {"patch": keep("v1", "PersistentVolume", sync_options), "target": {"kind": "PersistentVolume"}},
            {"patch": keep("v1", "PersistentVolumeClaim", sync_options), "target": {"kind": "PersistentVolumeClaim"}},
        ]
    }


@pytest.mark.parametrize(
    ("revision", "ref"),
    [
        ("main", {"branch": "main"}),
        ("refs/heads/release-1.10", {"branch": "release-1.10"}),
        ("refs/tags/v1", {"tag": "v1"}),
        ("refs/pull/7/head", {"name": "refs/pull/7/head"}),
        ("0123456789abcdef0123456789abcdef01234567", {"commit": "0123456789abcdef0123456789abcdef01234567"}),
    ],
)
def test_flux_revision_kinds(tmp_path: Path, catalog: Catalog, revision: str, ref: dict[str, str]) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    source = export(kfdef, catalog, ExportOptions(format="flux", repo_url="u", revision=revision)).objects[0]
    assert source["spec"]["ref"] == ref


def test_a_dependency_cycle_is_a_plan_error_that_prints_it(tmp_path: Path, catalog: Catalog) -> None:
    text = SMALL.replace("    - name: common\n", "    - name: common\n      dependsOn: [training-operator]\n")
    kfdef = kfdef_from(tmp_path, text, catalog)
    with pytest.raises(PlanError) as info:
        export(kfdef, catalog, ExportOptions(format="flux", repo_url="u"))
    assert info.value.message == "dependency cycle among applications: common → training-operator → common"
    assert info.value.details == ["common depends on training-operator", "training-operator depends on common"]
    assert info.value.exit_code == 5


@pytest.mark.parametrize(
    ("deps", "message", "details"),
    [
        pytest.param(
            {"a": ["b"], "b": ["c"], "c": ["a"], "d": []},
            "dependency cycle among applications: a → b → c → a",
            ["a depends on b", "b depends on c", "c depends on a"],
            id="three-read-from-the-first-name-in-dependency-direction",
        ),
        pytest.param(
            {"z": ["y"], "y": ["x"], "x": ["z"]},
            "dependency cycle among applications: x → z → y → x",
            ["x depends on z", "z depends on y", "y depends on x"],
            id="the-same-whichever-node-is-met-first",
        ),
        pytest.param(
            {"a": ["a"]}, "dependency cycle among applications: a → a", ["a depends on a"], id="self-dependency"
        ),
    ],
)
def test_sync_waves_name_a_cycle(deps: dict[str, list[str]], message: str, details: list[str]) -> None:
    with pytest.raises(PlanError) as info:
        sync_waves(deps)
    assert (info.value.message, info.value.details) == (message, details)


def test_sync_waves_of_a_chain_deeper_than_the_recursion_limit() -> None:
    """A walk by graphlib, not recursion: 5,000 applications in a row are waves 0 to 4,999."""
    deps = {f"app-{i:04d}": [f"app-{i - 1:04d}"] if i else [] for i in range(5000)}
    waves = sync_waves(deps)
    assert (waves["app-0000"], waves["app-2500"], waves["app-4999"]) == (0, 2500, 4999)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"repo_url": " "}, "--repo-url must name the git repository that holds the app directory"),
        ({"path": "/abs"}, "--path '/abs' must be relative to the repository root, without '..'"),
        ({"path": "a/../../b"}, "--path 'a/../../b' must be relative to the repository root, without '..'"),
        ({"interval": "10 minutes"}, "--interval '10 minutes' must be a duration such as 5m, 1h or 30s"),
        ({"revision": "--upload-pack=x"}, "--revision '--upload-pack=x' must be a branch, tag, commit or refs/… name"),
        ({"format": "helm"}, "--format must be one of argocd, argocd-plugin, flux, got 'helm'"),
    ],
)
def test_option_errors(tmp_path: Path, catalog: Catalog, change: dict[str, str], message: str) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    fields = {"format": "argocd", "repo_url": "u", **change}
    with pytest.raises(UsageError) as info:
        export(kfdef, catalog, ExportOptions(**fields))
    assert info.value.message == message


def test_write_files_lists_them_and_removes_only_its_own_stale_files(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    out = tmp_path / "gitops"
    out.mkdir()
    (out / "README.md").write_text("mine\n")
    (out / "other.yaml").write_text("kind: ConfigMap\n")
    opts = ExportOptions(format="argocd", repo_url="u")
    files, removed = write_files(kfdef, export(kfdef, catalog, opts), out)
    assert files == [
        "application-demo-common.yaml",
        "application-demo-training-operator.yaml",
        "argocd-cm.yaml",
        "kustomization.yaml",
    ]
    assert removed == []
    # argocd-cm.yaml is Argo CD's configuration, not one of the export's resources.
    assert yaml.safe_load((out / "kustomization.yaml").read_text())["resources"] == files[:2]
    smaller = kfdef_from(tmp_path, SMALL.replace("    - name: training-operator\n", ""), catalog)
    files, removed = write_files(smaller, export(smaller, catalog, opts), out)
    assert removed == ["application-demo-training-operator.yaml"]
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "application-demo-common.yaml",
        "argocd-cm.yaml",
        "kustomization.yaml",
        "other.yaml",
    ]
    (out / "kustomization.yaml").write_text("resources: []\n")
    with pytest.raises(UsageError) as info:
        write_files(smaller, export(smaller, catalog, opts), out)
    assert info.value.message == f"{out / 'kustomization.yaml'} exists and was not written by kfctl export"


def test_cli_prints_the_same_bytes_every_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_catalog: Catalog
) -> None:
    kfdef = kfdef_from(tmp_path, FULL, real_catalog)
    args = ["export", "-f", str(kfdef.path), "--format", "flux", "--repo-url", "https://git.example/p.git"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert main(args) == 0
    second = capsys.readouterr()
    assert first.out == second.out
    docs = list(yamlio.safe_load_all(first.out))
    assert [d["kind"] for d in docs] == ["GitRepository"] + ["Kustomization"] * 7
    assert first.err.startswith(f"Warning: {tmp_path}/kustomize/ has no directory for: cert-manager, common,")
    assert main([*args[:5], "--format", "argocd", "--repo-url", "u", "--path", "../x"]) == 2
    assert "--path '../x' must be relative" in capsys.readouterr().err


# cert-manager's cainjector fills the caBundle; Knative's webhooks narrow the rules of their own configurations.
WEBHOOK_CA = [
    ".webhooks[]?.clientConfig.caBundle",
    'select((.metadata.labels["app.kubernetes.io/name"] // "") | startswith("knative-")) | .webhooks[]?.rules',
]


@pytest.mark.parametrize(
    ("kinds", "ignored"),
    [
        pytest.param([("apps/v1", "Deployment"), ("v1", "Service")], [], id="nothing-others-fill-in"),
        pytest.param(
            [("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"), ("apps/v1", "Deployment")],
            [
                {
                    "group": "admissionregistration.k8s.io",
                    "kind": "ValidatingWebhookConfiguration",
                    "jqPathExpressions": WEBHOOK_CA,
                }
            ],
            id="a-validating-webhook",
        ),
        pytest.param(
            [("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "Role")],
            [
                {
                    "group": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "jqPathExpressions": ["select(.aggregationRule != null) | .rules"],
                }
            ],
            id="cluster-roles-rules-only-where-aggregated",
        ),
        pytest.param(
            [
                ("apiregistration.k8s.io/v1", "APIService"),
                ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
                ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
            ],
            [
                {
                    "group": "admissionregistration.k8s.io",
                    "kind": "MutatingWebhookConfiguration",
                    "jqPathExpressions": WEBHOOK_CA,
                },
                {
                    "group": "apiextensions.k8s.io",
                    "kind": "CustomResourceDefinition",
                    "jqPathExpressions": [".spec.conversion.webhook.clientConfig.caBundle"],
                },
                {"group": "apiregistration.k8s.io", "kind": "APIService", "jqPathExpressions": [".spec.caBundle"]},
            ],
            id="each-kind-once-sorted-by-group",
        ),
        pytest.param(  # the aggregated ones only: upstream's kubeflow-admin, -edit, -view
            [("rbac.authorization.k8s.io/v1", "ClusterRole")],
            [
                {
                    "group": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "jqPathExpressions": ["select(.aggregationRule != null) | .rules"],
                }
            ],
            id="aggregated-cluster-roles",
        ),
    ],
)
def test_argocd_ignores_the_fields_others_fill_in(
    kinds: list[tuple[str, str]], ignored: list[dict[str, object]]
) -> None:
    objects = [{"apiVersion": a, "kind": k, "metadata": {"name": f"o{i}"}} for i, (a, k) in enumerate(kinds)]
    assert argocd_settings.ignore_differences(objects) == ignored


def test_argocd_exports_ignore_differences_of_the_kinds_each_part_applies(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    (tmp_path / "kustomize" / "common").mkdir(parents=True)
    (tmp_path / "kustomize" / "training-operator").mkdir(parents=True)
    (tmp_path / "rendered").mkdir()
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validator"},
        "webhooks": [],
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}}
    (tmp_path / "rendered" / "common.yaml").write_text(yaml.safe_dump(namespace))
    (tmp_path / "rendered" / "training-operator.yaml").write_text(yaml.safe_dump(webhook))
    result = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u"))
    spec = {o["metadata"]["name"]: o["spec"] for o in result.objects}
    assert "ignoreDifferences" not in spec["demo-common"]
    assert spec["demo-training-operator"]["ignoreDifferences"] == [
        {
            "group": "admissionregistration.k8s.io",
            "kind": "ValidatingWebhookConfiguration",
            "jqPathExpressions": WEBHOOK_CA,
        }
    ]


def test_argocd_cm_snippet_holds_the_health_checks_in_argo_cds_key_format(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = kfdef_from(tmp_path, SMALL, catalog)
    [(name, text)] = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u", namespace="gitops")).files
    assert name == "argocd-cm.yaml"
    cm = yaml.safe_load(text)
    assert cm["metadata"] == {
        "name": "argocd-cm",
        "namespace": "gitops",
        "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
    }
    assert list(cm["data"]) == [
        "resource.customizations.health.apiextensions.k8s.io_CustomResourceDefinition",
        "resource.customizations.health.argoproj.io_Application",
        "resource.customizations.health.kubeflow.org_Experiment",
        "resource.customizations.health.kubeflow.org_JAXJob",
        "resource.customizations.health.kubeflow.org_MPIJob",
        "resource.customizations.health.kubeflow.org_Notebook",
        "resource.customizations.health.kubeflow.org_PaddleJob",
        "resource.customizations.health.kubeflow.org_Profile",
        "resource.customizations.health.kubeflow.org_PyTorchJob",
        "resource.customizations.health.kubeflow.org_TFJob",
        "resource.customizations.health.kubeflow.org_XGBoostJob",
        "resource.customizations.health.trainer.kubeflow.org_TrainJob",
    ]
    assert export(kfdef, catalog, ExportOptions(format="flux", repo_url="u")).files == ()


def test_a_kfdefs_wait_rules_become_argo_cds_health_checks_of_their_kinds(tmp_path: Path, catalog: Catalog) -> None:
    """spec.waitRules reach Argo CD: each rule's kind gets the check rule_health_check writes (Argo CD's own verdicts on
    it: e2e/test_argocd_health_checks.py); a rule for a kind kfctl has a check for replaces it."""
    rules = """\
  waitRules:
    - {apiGroup: db.example.com, kind: Database, ready: [{condition: Deployed}]}
    - {apiGroup: kubeflow.org, kind: TFJob, ready: [{field: status.phase, equals: Done}]}
"""
    kfdef = kfdef_from(tmp_path, SMALL + rules, catalog)
    [(_, text)] = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u")).files
    data = yaml.safe_load(text)["data"]
    database, tfjob = kfdef.wait_rules
    assert data["resource.customizations.health.db.example.com_Database"] == argocd_settings.rule_health_check(database)
    assert data["resource.customizations.health.kubeflow.org_TFJob"] == argocd_settings.rule_health_check(tfjob)
    assert 'if text({"status", "phase"}) == "Done" then' in data["resource.customizations.health.kubeflow.org_TFJob"]
    assert len(data) == 13  # kfctl's 12 and the Database's
