"""KfDefs written for kfctl v1.0 to v1.2 load and, where their trees allow, render (issue 14, items 1 and 2).

A table of KfDef shapes of our own, each with what the loader makes of it (or its exact error); trees of our
own for what rendering does with them; then the official v1.0 and v1.2 KfDefs and the kubeflow/manifests
v1.2.0 release (../shared/fixtures beside the checkout; skipped, naming the path, where it is not).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakecluster import FakeCluster, v1_app, write_app
from upstream import shared_fixture

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.cli import target
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.engine.served import unserved
from kfctl.errors import ConfigError, RenderError
from kfctl.render.kustomize import UNRESTRICTED, find_kustomize

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: ml}}\ndata: {{a: '1'}}\n"


def kfdef(*apps: dict[str, Any], metadata: dict[str, Any] | None = None, repo: str = "file:///nowhere") -> str:
    doc = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"namespace": "kubeflow"} if metadata is None else metadata,
        "spec": {"applications": list(apps), "repos": [{"name": "manifests", "uri": repo}]},
        "status": {"reposCache": [{"localPath": "/tmp/x", "name": "manifests"}]},  # kfctl v1 wrote this back
    }
    return yaml.safe_dump(doc, sort_keys=False)


def app(name: str, path: str, overlays: list[str] | None = None, **params: Any) -> dict[str, Any]:
    return v1_app(name, path, overlays, params)


# (id, directory name, KfDef text, expected: (name, [(app, overlays, package overlays, package parameters)],
# notes) or the exact first problem)
LOAD_CASES: list[tuple[str, str, str, Any]] = [
    (
        "no name: the directory's",
        "my-kf",
        kfdef(app("argo", "argo")),
        (
            "my-kf",
            [("argo", (), (), ())],
            [
                "{kfdef}: metadata.name is not set; the install is named 'my-kf' after its directory, as kfctl v1 "
                "named it (set metadata.name to keep the name if the directory moves)"
            ],
        ),
    ),
    (
        "no name, and a directory that is no DNS label",
        "My_KF",
        kfdef(app("argo", "argo")),
        "{kfdef}:3:1 metadata: name is required",
    ),
    (
        "v1.0 overlays and parameters of a package",
        "kf",
        kfdef(
            app("cert-manager", "cert-manager/cert-manager", ["self-signed", "application"], namespace="cert-manager"),
            app("spartakus", "common/spartakus", ["application"], usageId="x-1", reportUsage=True),
            metadata={"name": "kf"},
        ),
        (
            "kf",
            [
                ("cert-manager", (), ("self-signed", "application"), (("namespace", "cert-manager"),)),
                ("spartakus", (), ("application",), (("usageId", "x-1"), ("reportUsage", "true"))),
            ],
            [],
        ),
    ),
    (
        "a catalog overlay keeps its meaning beside a package's, and its parameters theirs",
        "kf",
        kfdef(
            app("web", "apps/web", ["image-mirror", "istio"], imageMirrorRegistry="mirror.example", replicas=3),
            metadata={"name": "kf"},
        ),
        ("kf", [("web", ("image-mirror",), ("istio",), (("replicas", "3"),))], []),
    ),
]


@pytest.mark.parametrize(("case", "directory", "text", "expected"), LOAD_CASES, ids=[c[0] for c in LOAD_CASES])
def test_v1_shapes_load(
    tmp_path: Path, real_catalog: Catalog, case: str, directory: str, text: str, expected: Any
) -> None:
    path = tmp_path / directory / "kfdef.yaml"
    path.parent.mkdir()
    path.write_text(text)
    if isinstance(expected, str):
        with pytest.raises(ConfigError) as err:
            load_kfdef(path, real_catalog)
        assert err.value.details[0] == expected.format(kfdef=path)
        return
    loaded = load_kfdef(path, real_catalog)
    name, apps, notes = expected
    assert loaded.name == name
    assert [(a.name, a.overlays, a.package_overlays, a.package_parameters) for a in loaded.applications] == apps
    assert list(loaded.notes) == [n.format(kfdef=path) for n in notes]


def test_a_catalog_application_still_refuses_an_unknown_overlay(tmp_path: Path, real_catalog: Catalog) -> None:
    path = tmp_path / "kf" / "kfdef.yaml"
    path.parent.mkdir()
    path.write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata: {name: kf}\nspec:\n  applications:\n"
        "  - name: common\n    kustomizeConfig: {overlays: [application]}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_kfdef(path, real_catalog)
    assert err.value.details == [
        f'{path}:7:34 spec.applications[0].kustomizeConfig.overlays[0]: unknown overlay "application"; known: ha, '
        "image-mirror"
    ]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# A v1-era package: a base, two overlays building on ../../base, and an application that reads a file of a
# sibling directory (kubeflow/manifests v1.2's application/v3 does), which kustomize's restrictor refuses.
V1_TREE = {
    "pkg/base/kustomization.yaml": "resources: [cm.yaml]\ncommonLabels: {a: '1'}\ncommonLabels: {a: '2'}\n",
    "pkg/base/cm.yaml": CM.format(name="base"),
    "pkg/overlays/application/kustomization.yaml": "bases: [../../base]\nresources: [app.yaml]\n",
    "pkg/overlays/application/app.yaml": CM.format(name="app"),
    "pkg/overlays/istio/kustomization.yaml": "bases: [../../base]\n",
    "sibling/v3/kustomization.yaml": "resources: [../shared/role.yaml]\n",
    "sibling/shared/role.yaml": CM.format(name="shared"),
}


def write_v1_app(tmp_path: Path, *apps: dict[str, Any]) -> Path:
    write_tree(tmp_path / "repo", V1_TREE)
    path = tmp_path / "kf" / "kfdef.yaml"
    path.parent.mkdir()
    path.write_text(kfdef(*apps, repo=f"file://{tmp_path / 'repo'}"))
    return path


def names(app_dir: Path, app: str) -> list[str]:
    return [o["metadata"]["name"] for o in yamlio.safe_load_all((app_dir / "rendered" / f"{app}.yaml").read_text())]


def test_a_v1_tree_renders_one_overlay_and_a_file_beside_its_directory(tmp_path: Path, real_catalog: Catalog) -> None:
    path = write_v1_app(tmp_path, app("pkg", "pkg", ["application"]), app("sibling", "sibling/v3"))
    result = generate(load_kfdef(path, real_catalog), real_catalog)
    app_dir = path.parent
    assert (names(app_dir, "pkg"), names(app_dir, "sibling")) == (["app", "base"], ["shared"])
    assert result.vendor_fallbacks == ()  # a key stated twice, as kustomize takes it, is no reason to vendor all
    kustomization = (app_dir / "kustomize" / "sibling" / "kustomization.yaml").read_text()
    assert "`kustomize build --load-restrictor LoadRestrictionsNone` of this" in kustomization
    built = subprocess.run(
        [*find_kustomize().argv, *UNRESTRICTED, str(app_dir / "kustomize" / "sibling")], capture_output=True, text=True
    )
    assert built.stdout == (app_dir / "rendered" / "sibling.yaml").read_text()


@pytest.mark.parametrize(
    ("legacy", "message"),
    [
        (
            app("pkg", "pkg", ["istio", "application"]),
            "application pkg: kfctl v1.0's overlays istio, application (several directories overlays/<name>) are "
            "not rendered by this kfctl",
        ),
        (
            app("pkg", "pkg", ["application"], namespace="ml"),
            "application pkg: kfctl v1.0's parameters namespace (entries of params.env) are not rendered by this kfctl",
        ),
    ],
)
def test_what_kfctl_v1_merged_is_refused_by_name(
    tmp_path: Path, real_catalog: Catalog, legacy: dict[str, Any], message: str
) -> None:
    path = write_v1_app(tmp_path, legacy)
    with pytest.raises(RenderError) as err:
        generate(load_kfdef(path, real_catalog), real_catalog)
    assert err.value.message == message
    assert err.value.hint is not None and "kfctl migrate" in err.value.hint


@pytest.fixture
def shared() -> Path:
    return shared_fixture(".")


@pytest.mark.parametrize(
    ("fixture", "count", "overlaid"),
    [
        ("kfctl_k8s_istio.v1.0.0.yaml", 43, {"cert-manager": ("self-signed", "application")}),
        ("kfctl_k8s_istio.v1.2.0.yaml", 16, {}),
    ],
)
def test_the_official_v1_kfdefs_load(
    tmp_path: Path, real_catalog: Catalog, shared: Path, fixture: str, count: int, overlaid: dict[str, Any]
) -> None:
    path = tmp_path / "kubeflow" / "kfdef.yaml"
    path.parent.mkdir()
    shutil.copy(shared / fixture, path)
    loaded = load_kfdef(path, real_catalog)
    assert (loaded.name, len(loaded.applications)) == ("kubeflow", count)
    package = {a.name: a.package_overlays for a in loaded.applications}
    assert {name: package[name] for name in overlaid} == overlaid


def test_the_v1_2_kfdef_renders_its_own_release(tmp_path: Path, real_catalog: Catalog, shared: Path) -> None:
    """The official KfDef, its repo pointed at the release tarball (as the fixture README says to)."""
    tarball = shared / "kubeflow-manifests-v1.2.0.tar.gz"
    doc = yaml.safe_load((shared / "kfctl_k8s_istio.v1.2.0.yaml").read_text())
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    doc["spec"]["repos"] = [{"name": "manifests", "uri": f"file://{tarball}", "sha256": digest}]
    path = tmp_path / "kubeflow" / "kfdef.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = generate(load_kfdef(path, real_catalog), real_catalog)
    assert (result.objects, result.vendor_fallbacks) == (565, ())


V1BETA1 = """\
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: gateways.networking.istio.io}
spec: {group: networking.istio.io, version: v1alpha3, scope: Namespaced, names: {kind: Gateway, plural: gateways}}
---
apiVersion: networking.istio.io/v1alpha3
kind: Gateway
metadata: {name: kubeflow-gateway, namespace: kubeflow}
---
apiVersion: rbac.authorization.k8s.io/v1beta1
kind: ClusterRole
metadata: {name: old-a}
---
apiVersion: rbac.authorization.k8s.io/v1beta1
kind: ClusterRole
metadata: {name: old-b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fine, namespace: kubeflow}
"""


@pytest.mark.parametrize("command", ["apply", "diff"])
def test_apis_the_cluster_no_longer_serves_are_named_at_once_before_any_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The Gateway's kind is served by a CRD of the bundle, so the CRD is named, not each Gateway."""
    cluster = FakeCluster()
    cluster.unserved = {"apiextensions.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1beta1"}
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)  # every command opens it there
    app_dir = tmp_path / "kf"
    write_app(app_dir, "common", rendered={"common": V1BETA1})
    assert main([command, str(app_dir), "--skip-generate"]) == 7
    assert capsys.readouterr().err.splitlines() == [
        "Error (API denied): 3 object(s) of the bundle are of 2 apiVersion/kind(s) the cluster does not serve; "
        "nothing was written",
        "  apiextensions.k8s.io/v1beta1 CustomResourceDefinition: 1 object(s) in common; removed in Kubernetes "
        "1.22; use apiextensions.k8s.io/v1",
        "  rbac.authorization.k8s.io/v1beta1 ClusterRole: 2 object(s) in common; removed in Kubernetes 1.22; use "
        "rbac.authorization.k8s.io/v1",
        "Hint: render these objects at a version the cluster serves (kubectl api-resources lists them), or install "
        "the CRD that serves them first (an application marked `external: true` checks it is there); a kfctl v1 "
        "KfDef: `kfctl migrate FILE` moves it onto the catalog",
    ]
    assert cluster.writes == []


def test_v1_plugins_load_their_fields_used_or_noted_never_refused(tmp_path: Path, real_catalog: Catalog) -> None:
    path = tmp_path / "gke-kf" / "kfdef.yaml"
    path.parent.mkdir()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kfdef.apps.kubeflow.org/v1",
                "kind": "KfDef",
                "metadata": {"name": "gke-kf", "namespace": "kubeflow"},
                "spec": {
                    "applications": [{"name": "common"}],
                    "plugins": [
                        {
                            "kind": "KfGcpPlugin",
                            "metadata": {"name": "gcp"},
                            "spec": {"project": "my-project", "zone": "us-east1-d", "email": "me@example.com"},
                        },
                        {"kind": "KfMinikubePlugin", "metadata": {"name": "minikube"}, "spec": {}},
                    ],
                },
            }
        )
    )
    loaded = load_kfdef(path, real_catalog)
    assert loaded.platform == "gcp"
    assert {k: loaded.platform_parameters[k] for k in ("cluster", "project", "zone")} == {
        "cluster": "gke-kf",
        "project": "my-project",
        "zone": "us-east1-d",
    }
    assert list(loaded.notes) == [
        f"{path}: plugin KfGcpPlugin has no cluster; using 'gke-kf', the install's name, as kfctl v1 named the "
        "cluster it created",
        f"{path}: plugin KfGcpPlugin: not used by kfctl: email",
        f"{path}: plugin KfMinikubePlugin is not used by platform gcp",
    ]


def test_kinds_the_bundle_itself_will_serve_are_not_named() -> None:
    """A v1beta1 CRD's kind (spec.version) and the kinds of an APIService the bundle registers are served once
    those are in place; only what nothing will ever serve is named."""
    cluster = FakeCluster()
    cluster.unserved = {
        "apiextensions.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1beta1",
        "metrics.example.org/v1beta1",
        "old.example.org/v1",
    }
    objects = [("a", o) for o in yaml.safe_load_all(V1BETA1)] + [
        (
            "m",
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": "v1beta1.metrics.example.org"},
                "spec": {"group": "metrics.example.org", "version": "v1beta1"},
            },
        ),
        ("m", {"apiVersion": "metrics.example.org/v1beta1", "kind": "NodeMetrics", "metadata": {"name": "n"}}),
        ("m", {"apiVersion": "old.example.org/v1", "kind": "Thing", "metadata": {"name": "t"}}),
    ]
    assert [(u.api_version, u.kind, u.count) for u in unserved(cluster, objects)] == [
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", 1),
        ("old.example.org/v1", "Thing", 1),
        ("rbac.authorization.k8s.io/v1beta1", "ClusterRole", 2),
    ]
