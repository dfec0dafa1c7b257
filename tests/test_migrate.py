"""`kfctl migrate`: kfctl v1.0 to v1.2 KfDefs rewritten for the built-in catalog (issue 14, item 4).

Golden tables for the official v1.0 and v1.2 KfDefs (../shared/fixtures beside the checkout; skipped, naming
the path, where it is not): what became of every application, the applications written, the platform, and
that today's loader takes the result. Then small KfDefs of our own, one row per situation: the name from the
directory, parameters carried or dropped, the platform from the plugin, the files refused, `--check`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakecluster import v1_app
from upstream import SHARED_FIXTURES, shared_fixture

from kfctl.app.generate import generate
from kfctl.app.migrate import migrate_file
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.errors import ConfigError, MigrationDropped
from kfctl.migrate import legacy
from kfctl.migrate.migrate import UNKNOWN, migrate

# The reasons, as kfctl prints them (legacy.py); named here so the tables below stay readable.
ISTIO = (
    "a service mesh, not in the catalog (its kserve runs without one); install Istio with istioctl or its Helm "
    "charts if you use it"
)
LOCAL_GATEWAY = "an Istio gateway for Knative's cluster-local traffic; neither is in the catalog"
ANONYMOUS = (
    "an Istio EnvoyFilter that set header kubeflow-userid to anonymous@kubeflow.org; Istio and multi-user login "
    "are not in the catalog"
)
APPLICATION = (
    "the Kubernetes Application controller and CRD (app.k8s.io), removed upstream; kfctl tracks what it installs "
    "with its own inventory"
)
METACONTROLLER = (
    "ran the multi-user pipelines profile controller; the catalog's pipelines are single-user and need none"
)
PODDEFAULTS = "the PodDefault admission webhook (admission-webhook); not in the catalog"
SPARK = "the Spark operator; not in the catalog (install kubeflow/spark-operator with its Helm chart)"
KNATIVE = "Knative Serving, which KFServing ran on; the catalog's kserve runs in RawDeployment mode without it"
SPARTAKUS = "usage reporting, removed upstream"
DASHBOARD = "the Kubeflow central dashboard (web UI); not in the catalog"
PROFILES = "multi-user profiles (Profile resources, a namespace per user); the catalog is single-user"
SELDON = "Seldon Core, a third-party model server; not in the catalog, whose model serving is kserve"
MXNET = "MXNet jobs: removed upstream (training-operator v1.9.0 dropped MXJob; Apache MXNet is retired)"

# (legacy application, its catalog components or "dropped: <reason>")
V1_2_MAPPING = [
    ("namespaces", "common"),
    ("application", f"dropped: {APPLICATION}"),
    ("istio-stack", f"dropped: {ISTIO}"),
    ("cluster-local-gateway", f"dropped: {LOCAL_GATEWAY}"),
    ("istio", f"dropped: {ISTIO}"),
    ("cert-manager-crds", "cert-manager"),
    ("cert-manager-kube-system-resources", "cert-manager"),
    ("cert-manager", "cert-manager"),
    ("add-anonymous-user-filter", f"dropped: {ANONYMOUS}"),
    ("metacontroller", f"dropped: {METACONTROLLER}"),
    ("bootstrap", f"dropped: {PODDEFAULTS}"),
    ("spark-operator", f"dropped: {SPARK}"),
    ("kubeflow-apps", "common, notebook-controller, training-operator, katib, pipelines"),
    ("knative", f"dropped: {KNATIVE}"),
    ("kfserving", "kserve"),
    ("spartakus", f"dropped: {SPARTAKUS}"),
]
# kubeflow-apps is stacks/kubernetes: (its package, components or "dropped: <reason>")
V1_2_STACK = [
    ("admission-webhook/webhook/v3", f"dropped: {PODDEFAULTS}"),
    ("common/centraldashboard/overlays/stacks", f"dropped: {DASHBOARD}"),
    ("kubeflow-roles/base", "common"),
    ("jupyter/jupyter-web-app/base_v3", "notebook-controller"),
    ("jupyter/notebook-controller/base_v3", "notebook-controller"),
    ("profiles/base_v3", f"dropped: {PROFILES}"),
    ("pytorch-job/pytorch-job-crds/overlays/application", "training-operator"),
    ("pytorch-job/pytorch-operator/overlays/application", "training-operator"),
    ("tf-training/tf-job-crds/overlays/application", "training-operator"),
    ("tf-training/tf-job-operator/overlays/application", "training-operator"),
    ("mxnet-job/mxnet-operator/overlays/application", f"dropped: {MXNET}"),
    ("mpi-job/mpi-operator/overlays/application", "training-operator"),
    ("katib/installs/katib-standalone", "katib"),
    ("pipeline/minio/installs/generic", "pipelines"),
    ("pipeline/mysql/installs/generic", "pipelines"),
    ("pipeline/installs/multi-user", "pipelines"),
    ("argo/base_v3", "pipelines"),
    ("seldon/seldon-core-operator/overlays/application", f"dropped: {SELDON}"),
    ("metadata/v3", "pipelines"),
]
V1_0_MAPPING = [
    ("istio-crds", f"dropped: {ISTIO}"),
    ("istio-install", f"dropped: {ISTIO}"),
    ("cluster-local-gateway", f"dropped: {LOCAL_GATEWAY}"),
    ("istio", f"dropped: {ISTIO}"),
    ("add-anonymous-user-filter", f"dropped: {ANONYMOUS}"),
    ("application-crds", f"dropped: {APPLICATION}"),
    ("application", f"dropped: {APPLICATION}"),
    ("cert-manager-crds", "cert-manager"),
    ("cert-manager-kube-system-resources", "cert-manager"),
    ("cert-manager", "cert-manager"),
    ("metacontroller", f"dropped: {METACONTROLLER}"),
    ("argo", "pipelines"),
    ("kubeflow-roles", "common"),
    ("centraldashboard", f"dropped: {DASHBOARD}"),
    ("bootstrap", f"dropped: {PODDEFAULTS}"),
    ("webhook", f"dropped: {PODDEFAULTS}"),
    ("jupyter-web-app", "notebook-controller"),
    ("spark-operator", f"dropped: {SPARK}"),
    ("metadata", "pipelines"),
    ("notebook-controller", "notebook-controller"),
    ("pytorch-job-crds", "training-operator"),
    ("pytorch-operator", "training-operator"),
    ("knative-crds", f"dropped: {KNATIVE}"),
    ("knative-install", f"dropped: {KNATIVE}"),
    ("kfserving-crds", "kserve"),
    ("kfserving-install", "kserve"),
    ("spartakus", f"dropped: {SPARTAKUS}"),
    ("tensorboard", "tensorboard-controller"),
    ("tf-job-crds", "training-operator"),
    ("tf-job-operator", "training-operator"),
    ("katib-crds", "katib"),
    ("katib-controller", "katib"),
    ("api-service", "pipelines"),
    ("minio", "pipelines"),
    ("mysql", "pipelines"),
    ("persistent-agent", "pipelines"),
    ("pipelines-runner", "pipelines"),
    ("pipelines-ui", "pipelines"),
    ("pipelines-viewer", "pipelines"),
    ("scheduledworkflow", "pipelines"),
    ("pipeline-visualization-service", "pipelines"),
    ("profiles", f"dropped: {PROFILES}"),
    ("seldon-core-operator", f"dropped: {SELDON}"),
]
# The v1.0 parameters and overlays that do not simply vanish with their application: (application, kind,
# name, value, outcome). Overlay "application" of every package is not needed (kfctl keeps an inventory).
V1_0_SETTINGS = [
    ("cert-manager-crds", "parameter", "namespace", "cert-manager", "not needed"),
    ("cert-manager-kube-system-resources", "parameter", "namespace", "kube-system", "dropped"),
    ("cert-manager", "parameter", "namespace", "cert-manager", "not needed"),
    ("cert-manager", "overlay", "self-signed", "", "not needed"),
    ("argo", "overlay", "istio", "", "dropped"),
    ("jupyter-web-app", "parameter", "userid-header", "kubeflow-userid", "dropped"),
    ("jupyter-web-app", "overlay", "istio", "", "dropped"),
    ("metadata", "overlay", "istio", "", "dropped"),
    ("metadata", "overlay", "db", "", "not needed"),
    ("notebook-controller", "overlay", "istio", "", "dropped"),
    ("tensorboard", "overlay", "istio", "", "dropped"),
    ("katib-controller", "overlay", "istio", "", "dropped"),
    ("minio", "parameter", "minioPvcName", "minio-pv-claim", "dropped"),
    ("mysql", "parameter", "mysqlPvcName", "mysql-pv-claim", "not needed"),
    ("pipelines-ui", "overlay", "istio", "", "dropped"),
]
V1_2_COMPONENTS = ["cert-manager", "common", "training-operator", "katib", "kserve", "notebook-controller", "pipelines"]
V1_0_COMPONENTS = [*V1_2_COMPONENTS, "tensorboard-controller"]

OFFICIAL = [
    ("kfctl_k8s_istio.v1.2.0.yaml", V1_2_MAPPING, V1_2_COMPONENTS),
    ("kfctl_k8s_istio.v1.0.0.yaml", V1_0_MAPPING, V1_0_COMPONENTS),
]


def shared_kfdef(tmp_path: Path, name: str, directory: str = "kf-prod") -> Path:
    """A copy of an official KfDef in tmp_path/<directory>/: migrate writes beside its input, and
    ../shared/fixtures is read-only test data."""
    source = shared_fixture(name)
    path = tmp_path / directory / name
    path.parent.mkdir(parents=True)
    shutil.copyfile(source, path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def shown(components: tuple[str, ...], dropped: str | None) -> str:
    return f"dropped: {dropped}" if dropped else ", ".join(components)


@pytest.mark.parametrize(("fixture", "mapping", "components"), OFFICIAL, ids=[o[0] for o in OFFICIAL])
def test_official_kfdef_migrates_to_a_kfdef_the_loader_takes(
    tmp_path: Path, real_catalog: Catalog, fixture: str, mapping: list[tuple[str, str]], components: list[str]
) -> None:
    source = shared_kfdef(tmp_path, fixture)
    result = migrate_file(source, real_catalog, output=None, force=False, check=False)
    m = result.migration
    assert [(a.name, shown(a.components, a.dropped)) for a in m.applications] == mapping
    assert list(m.components) == components
    assert (m.platform, m.platform_from) == ("generic", "no plugin: an existing cluster")
    assert (m.name, m.name_from_directory, m.namespace, m.unset) == ("kf-prod", True, "kubeflow", ())
    assert result.output == source.with_name(fixture.removesuffix(".yaml") + ".migrated.yaml")
    loaded = load_kfdef(result.output, real_catalog)
    assert [a.name for a in loaded.applications] == components
    assert [a.component for a in loaded.applications] == components
    assert (loaded.name, loaded.namespace, loaded.platform, loaded.notes) == ("kf-prod", "kubeflow", "generic", ())
    assert all(a.repo.builtin for a in loaded.applications)
    assert source.read_bytes() == (SHARED_FIXTURES / fixture).read_bytes()  # the input is never written


def test_the_v1_2_umbrella_stack_is_mapped_package_by_package(tmp_path: Path, real_catalog: Catalog) -> None:
    source = shared_kfdef(tmp_path, "kfctl_k8s_istio.v1.2.0.yaml")
    m = migrate_file(source, real_catalog, output=None, force=False, check=True).migration
    (stack,) = [a for a in m.applications if a.parts]
    assert (stack.name, stack.path) == ("kubeflow-apps", "stacks/kubernetes")
    assert [(p.path, shown(p.components, p.dropped)) for p in stack.parts] == V1_2_STACK
    # What the v1.2 fixture's kubeflow/manifests release really lists in each stack, its own ./application/<x>
    # packages included (stacks/azure has four, which the table lacked before issue 51 row 19).
    tarball = SHARED_FIXTURES / "kubeflow-manifests-v1.2.0.tar.gz"
    if tarball.is_file():
        import posixpath
        import tarfile

        with tarfile.open(tarball) as tar:
            for name, parts in legacy.STACKS.items():
                member = tar.extractfile(f"manifests-1.2.0/{name}/kustomization.yaml")
                assert member is not None
                resources = yaml.safe_load(member.read())["resources"]
                assert [posixpath.normpath(posixpath.join(name, r)) for r in resources] == list(parts), name


def test_v1_0_parameters_and_overlays_are_reported(tmp_path: Path, real_catalog: Catalog) -> None:
    source = shared_kfdef(tmp_path, "kfctl_k8s_istio.v1.0.0.yaml")
    m = migrate_file(source, real_catalog, output=None, force=False, check=True).migration
    reported = [(s.source, s.kind, s.name, s.value, s.outcome) for s in m.settings if s.name != "application"]
    assert reported == V1_0_SETTINGS
    assert {s.outcome for s in m.settings if s.name == "application"} == {"not needed"}
    assert "parameters" not in json.dumps(m.document)  # nothing of v1.0's carried: no catalog equivalents


def test_the_migrated_file_says_where_it_came_from_and_what_was_dropped(tmp_path: Path, real_catalog: Catalog) -> None:
    source = shared_kfdef(tmp_path, "kfctl_k8s_istio.v1.2.0.yaml")
    text = migrate_file(source, real_catalog, output=None, force=False, check=False).output.read_text()
    header = text.split("\napiVersion:", 1)[0].splitlines()
    assert header[0] == (
        f"# Migrated from {source} by `kfctl migrate`: its kfctl v1 applications mapped to kfctl's catalog."
    )
    assert all(line.startswith("#") for line in header)
    assert f"#   spartakus (stacks/kubernetes/application/spartakus): {SPARTAKUS}" in header
    assert f"#   kubeflow-apps / profiles/base_v3: {PROFILES}" in header
    assert "#   kfserving -> kserve" in header


def test_migrated_v1_2_renders(tmp_path: Path, real_catalog: Catalog) -> None:
    """The one migrate test that runs kustomize: the catalog KfDef renders as `kfctl generate` would."""
    source = shared_kfdef(tmp_path, "kfctl_k8s_istio.v1.2.0.yaml")
    output = migrate_file(source, real_catalog, output=tmp_path / "kf-prod" / "kfdef.yaml", force=False, check=False)
    result = generate(load_kfdef(output.output, real_catalog), real_catalog)
    assert list(result.applications) == V1_2_COMPONENTS
    assert result.objects > 0


def test_cli_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = shared_kfdef(tmp_path, "kfctl_k8s_istio.v1.2.0.yaml")
    code, out, err = run(capsys, "migrate", str(source))
    output = source.with_name("kfctl_k8s_istio.v1.2.0.migrated.yaml")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Platform generic (no plugin: an existing cluster)."
    assert lines[3].split() == ["LEGACY", "APPLICATION", "CATALOG", "COMPONENT"]
    assert any(line.split(None, 1) == ["spartakus", f"dropped: {SPARTAKUS}"] for line in lines)
    assert lines[-2:] == [
        f"Wrote {output}: 7 application(s): {', '.join(V1_2_COMPONENTS)}",
        f"Next: kfctl generate -f {output}",
    ]
    code, out, err = run(capsys, "migrate", str(source), "--to", str(tmp_path / "other.yaml"), "-o", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert (data["output"], data["written"], data["dropped"]) == (str(tmp_path / "other.yaml"), True, True)
    assert [(a["name"], shown(a["components"], a["dropped"])) for a in data["applications"]] == V1_2_MAPPING
    assert data["components"] == V1_2_COMPONENTS


# -- KfDefs of our own -------------------------------------------------------------------------------------


def v1(*apps: dict[str, Any], metadata: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"namespace": "kubeflow"} if metadata is None else metadata,
        "spec": {
            "applications": list(apps),
            "repos": [{"name": "manifests", "uri": "https://github.com/kubeflow/manifests/archive/v1.2.0.tar.gz"}],
            **spec,
        },
    }


app = v1_app


TF = app("tf-job-operator", "tf-training/tf-job-operator")


def write(tmp_path: Path, doc: dict[str, Any], directory: str = "kf") -> Path:
    path = tmp_path / directory / "app.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# (id, directory, metadata, expected name, named after the directory)
NAME_CASES = [
    ("no name: the directory's", "kf-prod", {"namespace": "ml"}, "kf-prod", True),
    ("no name, a directory that is no DNS label", "My KF_App", {}, "my-kf-app", True),
    ("no name, nothing usable in the directory", "ÉÉ", {}, "kubeflow", True),
    ("a name is kept", "kf-prod", {"name": "prod", "namespace": "ml"}, "prod", False),
    ("an empty name is no name", "kf-prod", {"name": ""}, "kf-prod", True),
]


@pytest.mark.parametrize(
    ("case", "directory", "metadata", "name", "from_dir"), NAME_CASES, ids=[c[0] for c in NAME_CASES]
)
def test_name_from_the_directory(
    tmp_path: Path,
    real_catalog: Catalog,
    case: str,
    directory: str,
    metadata: dict[str, Any],
    name: str,
    from_dir: bool,
) -> None:
    source = write(tmp_path, v1(TF, metadata=metadata), directory)
    result = migrate_file(source, real_catalog, output=None, force=False, check=False)
    assert (result.migration.name, result.migration.name_from_directory) == (name, from_dir)
    loaded = load_kfdef(result.output, real_catalog)
    assert (loaded.name, loaded.namespace) == (name, metadata.get("namespace", "kubeflow"))
    header = result.output.read_text()
    said = f"# metadata.name was not set: the install is named {name!r} after the file's directory"
    assert (said in header) is from_dir


# (id, applications, expected (source, kind, name, value, outcome, target), expected parameters in the
# migrated KfDef: {component: {name: value}})
PARAM_CASES: list[tuple[str, list[dict[str, Any]], list[tuple[str, ...]], dict[str, dict[str, Any]]]] = [
    (
        "USE_ISTIO becomes useIstio, typed",
        [app("notebook-controller", "jupyter/notebook-controller", None, {"USE_ISTIO": "true"})],
        [("notebook-controller", "parameter", "USE_ISTIO", "true", "carried", "notebook-controller.useIstio")],
        {"notebook-controller": {"useIstio": True}},
    ),
    (
        "a value the catalog's type refuses is dropped",
        [app("notebook-controller", "jupyter/notebook-controller", None, {"USE_ISTIO": "maybe"})],
        [("notebook-controller", "parameter", "USE_ISTIO", "maybe", "dropped", "notebook-controller")],
        {},
    ),
    (
        "a name the component declares is carried as it is",
        [
            app(
                "jupyter-web-app",
                "jupyter/jupyter-web-app",
                None,
                {"clusterDomain": "corp.local", "userid-header": "x-user"},
            )
        ],
        [
            (
                "jupyter-web-app",
                "parameter",
                "clusterDomain",
                "corp.local",
                "carried",
                "notebook-controller.clusterDomain",
            ),
            ("jupyter-web-app", "parameter", "userid-header", "x-user", "dropped", "notebook-controller"),
        ],
        {"notebook-controller": {"clusterDomain": "corp.local"}},
    ),
    (
        "what the catalog does anyway is not needed; anything else is dropped",
        [
            app("mysql", "pipeline/mysql", None, {"mysqlPvcName": "mysql-pv-claim"}),
            app("tf-job-operator", "tf-training/tf-job-operator", None, {"namespace": "kubeflow"}),
            app("katib-controller", "katib/katib-controller", None, {"namespace": "katib"}),
        ],
        [
            ("mysql", "parameter", "mysqlPvcName", "mysql-pv-claim", "not needed", "pipelines"),
            ("tf-job-operator", "parameter", "namespace", "kubeflow", "not needed", "training-operator"),
            ("katib-controller", "parameter", "namespace", "katib", "dropped", "katib"),
        ],
        {},
    ),
    (
        "no equivalent: dropped",
        [app("katib-controller", "katib/katib-controller", None, {"clusterDomain": "corp.local"})],
        [("katib-controller", "parameter", "clusterDomain", "corp.local", "dropped", "katib")],
        {},
    ),
    (
        "two applications, one component: the first value stays, a different second is dropped",
        [
            app("tf-job-operator", "tf-training/tf-job-operator", None, {"gangSchedulerName": "volcano"}),
            app("pytorch-operator", "pytorch-job/pytorch-operator", None, {"gangSchedulerName": "volcano"}),
            app("mpi-operator", "mpi-job/mpi-operator", None, {"gangSchedulerName": "scheduler-plugins-scheduler"}),
        ],
        [
            (
                "tf-job-operator",
                "parameter",
                "gangSchedulerName",
                "volcano",
                "carried",
                "training-operator.gangSchedulerName",
            ),
            (
                "pytorch-operator",
                "parameter",
                "gangSchedulerName",
                "volcano",
                "carried",
                "training-operator.gangSchedulerName",
            ),
            (
                "mpi-operator",
                "parameter",
                "gangSchedulerName",
                "scheduler-plugins-scheduler",
                "dropped",
                "training-operator.gangSchedulerName",
            ),
        ],
        {"training-operator": {"gangSchedulerName": "volcano"}},
    ),
    (
        "a catalog overlay is carried; a v1.0 package overlay is not",
        [app("katib-controller", "katib/katib-controller", ["ha", "application", "istio", "fancy"])],
        [
            ("katib-controller", "overlay", "ha", "", "carried", "katib"),
            ("katib-controller", "overlay", "application", "", "not needed", "katib"),
            ("katib-controller", "overlay", "istio", "", "dropped", "katib"),
            ("katib-controller", "overlay", "fancy", "", "dropped", "katib"),
        ],
        {},
    ),
]


@pytest.mark.parametrize(("case", "apps", "settings", "parameters"), PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameters_carried_or_dropped(
    tmp_path: Path,
    real_catalog: Catalog,
    case: str,
    apps: list[dict[str, Any]],
    settings: list[tuple[str, ...]],
    parameters: dict[str, dict[str, Any]],
) -> None:
    source = write(tmp_path, v1(*apps))
    result = migrate_file(source, real_catalog, output=None, force=False, check=False)
    m = result.migration
    assert [(s.source, s.kind, s.name, s.value, s.outcome, s.target) for s in m.settings] == settings
    assert all(s.reason for s in m.settings if s.outcome != "carried")
    loaded = load_kfdef(result.output, real_catalog)
    assert {a.component: a.parameters for a in loaded.applications if a.parameters} == parameters
    assert m.dropped is any(s[4] == "dropped" for s in settings)


GCP = {"kind": "KfGcpPlugin", "metadata": {"name": "gcp"}, "spec": {"project": "proj-1", "zone": "us-east1-b"}}
GCP_AUTH = {**GCP, "spec": {**GCP["spec"], "auth": {"iap": {"oAuthClientId": "x"}}, "useBasicAuth": False}}
AWS = {"kind": "KfAwsPlugin", "metadata": {"name": "aws"}, "spec": {"region": "us-west-2", "roles": ["r"]}}

# (id, spec additions, platform, from, plugin spec written, settings (source, name, outcome, target), unset)
PLATFORM_CASES: list[tuple[str, dict[str, Any], str, str, dict[str, Any] | None, list[tuple[str, ...]], list[str]]] = [
    ("no plugin: generic", {}, "generic", "no plugin: an existing cluster", None, [], []),
    (
        "KfGcpPlugin: gcp; the cluster is the install's name",
        {"plugins": [GCP]},
        "gcp",
        "plugin KfGcpPlugin",
        {"cluster": "kf", "project": "proj-1", "zone": "us-east1-b"},
        [
            ("plugin KfGcpPlugin", "project", "carried", "gcp.project"),
            ("plugin KfGcpPlugin", "zone", "carried", "gcp.zone"),
            ("metadata.name", "name", "carried", "gcp.cluster"),
        ],
        [],
    ),
    (
        "KfGcpPlugin's login settings are dropped",
        {"plugins": [GCP_AUTH]},
        "gcp",
        "plugin KfGcpPlugin",
        {"cluster": "kf", "project": "proj-1", "zone": "us-east1-b"},
        [
            ("plugin KfGcpPlugin", "project", "carried", "gcp.project"),
            ("plugin KfGcpPlugin", "zone", "carried", "gcp.zone"),
            ("plugin KfGcpPlugin", "auth", "dropped", "gcp"),
            ("plugin KfGcpPlugin", "useBasicAuth", "dropped", "gcp"),
            ("metadata.name", "name", "carried", "gcp.cluster"),
        ],
        [],
    ),
    (
        # The autoscaler's role ARN (which v1 never had) is not asked for: no chosen component reads it.
        "KfAwsPlugin: aws, no autoscaler so no role ARN",
        {"plugins": [AWS]},
        "aws",
        "plugin KfAwsPlugin",
        {"clusterName": "kf", "region": "us-west-2"},
        [
            ("plugin KfAwsPlugin", "region", "carried", "aws.region"),
            ("plugin KfAwsPlugin", "roles", "dropped", "aws"),
            ("metadata.name", "name", "carried", "aws.clusterName"),
        ],
        [],
    ),
    (
        "KfMinikubePlugin: generic",
        {"plugins": [{"kind": "KfMinikubePlugin", "spec": {}}]},
        "generic",
        "plugin KfMinikubePlugin: a Minikube cluster is an existing cluster without cloud integration",
        None,
        [],
        [],
    ),
    (
        "an unknown plugin kind is dropped",
        {"plugins": [{"kind": "KfOpenShiftPlugin", "spec": {}}]},
        "generic",
        "no plugin: an existing cluster",
        None,
        [("plugin KfOpenShiftPlugin", "KfOpenShiftPlugin", "dropped", "")],
        [],
    ),
    (
        # v1 took any text; what is not of the parameter's type is dropped (with the reason), not written to fail
        "a plugin value not of its parameter's type is dropped",
        {"plugins": [{**GCP, "spec": {**GCP["spec"], "project": "My Project"}}]},
        "gcp",
        "plugin KfGcpPlugin",
        {"cluster": "kf", "zone": "us-east1-b"},
        [
            ("plugin KfGcpPlugin", "project", "dropped", "gcp"),
            ("plugin KfGcpPlugin", "zone", "carried", "gcp.zone"),
            ("metadata.name", "name", "carried", "gcp.cluster"),
        ],
        [],
    ),
    ("a platform already set is kept", {"platform": "kind"}, "kind", "spec.platform", None, [], []),
    (
        "a platform already set takes its own plugin's spec; a second plugin is dropped",
        {"platform": "gcp", "plugins": [AWS, {**GCP, "spec": {**GCP["spec"], "cluster": "gke-1"}}]},
        "gcp",
        "spec.platform",
        {"cluster": "gke-1", "project": "proj-1", "zone": "us-east1-b"},
        [
            ("plugin KfAwsPlugin", "KfAwsPlugin", "dropped", ""),
            ("plugin KfGcpPlugin", "project", "carried", "gcp.project"),
            ("plugin KfGcpPlugin", "zone", "carried", "gcp.zone"),
            ("plugin KfGcpPlugin", "cluster", "carried", "gcp.cluster"),
        ],
        [],
    ),
]


@pytest.mark.parametrize(
    ("case", "spec", "platform", "platform_from", "plugin", "settings", "unset"),
    PLATFORM_CASES,
    ids=[c[0] for c in PLATFORM_CASES],
)
def test_platform_from_the_plugin(
    tmp_path: Path,
    real_catalog: Catalog,
    case: str,
    spec: dict[str, Any],
    platform: str,
    platform_from: str,
    plugin: dict[str, Any] | None,
    settings: list[tuple[str, ...]],
    unset: list[str],
) -> None:
    source = write(tmp_path, v1(TF, **spec))
    result = migrate_file(source, real_catalog, output=None, force=False, check=False)
    m = result.migration
    assert (m.platform, m.platform_from) == (platform, platform_from)
    assert [(s.source, s.name, s.outcome, s.target) for s in m.settings] == settings
    assert [u.split(" ", 1)[0] for u in m.unset] == unset
    written = m.document["spec"].get("plugins")
    assert (written[0]["spec"] if written else None) == plugin
    if unset:
        with pytest.raises(ConfigError) as err:
            load_kfdef(result.output, real_catalog)
        assert [d.split(": ", 1)[1].split(" (", 1)[0] for d in err.value.details or [err.value.message]] == [
            f'platform "{platform}" requires parameter "{u}" in the spec of a {written[0]["kind"]} plugin'
            for u in unset
        ]
        assert f"# Set before `kfctl generate` (plugin spec of platform {platform}):" in result.output.read_text()
    else:
        assert load_kfdef(result.output, real_catalog).platform == platform


def test_applications_of_a_repo_of_ones_own_are_kept(tmp_path: Path, real_catalog: Catalog) -> None:
    mine = {"name": "team-apps", "uri": "https://git.example.com/team/apps.git", "ref": "v3"}
    own = {"name": "feature-store", "kustomizeConfig": {"repoRef": {"name": "team-apps", "path": "feast"}}}
    clash = {"name": "katib", "kustomizeConfig": {"repoRef": {"name": "team-apps", "path": "katib-fork"}}}
    unknown = app("kubebench", "kubebench/kubebench-operator")
    doc = v1(TF, own, clash, unknown)
    doc["spec"]["repos"].append(mine)
    m = migrate(doc, real_catalog, default_name="kf")
    assert [(a.name, a.kept, a.dropped) for a in m.applications] == [
        ("tf-job-operator", False, None),
        ("feature-store", True, None),
        ("katib", False, 'its name is the catalog component "katib"\'s; rename it and add it back'),
        ("kubebench", False, UNKNOWN),
    ]
    assert m.document["spec"]["applications"][-1] == own
    assert m.document["spec"]["repos"] == [{"name": "manifests", "uri": "kfctl://catalog"}, mine]


def test_dependencies_are_added_and_components_written_once(real_catalog: Catalog) -> None:
    doc = v1(
        app("katib-crds", "katib/katib-crds"),
        app("katib-controller", "katib/katib-controller"),
        app("istio", "istio/istio"),
    )
    m = migrate(doc, real_catalog, default_name="kf")
    assert (list(m.components), list(m.added)) == (
        ["cert-manager", "common", "training-operator", "katib"],
        [
            "cert-manager",
            "common",
            "training-operator",
        ],
    )
    assert [a["name"] for a in m.document["spec"]["applications"]] == list(m.components)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(["a list"], "not a KfDef: expected a mapping with kind: KfDef", id="not a mapping"),
        pytest.param(
            {"apiVersion": "kfdef.apps.kubeflow.org/v1alpha1", "kind": "KfDef", "spec": {"components": []}},
            "apiVersion must be one of kfdef.apps.kubeflow.org/v1, kfdef.apps.kubeflow.org/v1beta1, got "
            "'kfdef.apps.kubeflow.org/v1alpha1'",
            id="v1alpha1",
        ),
        pytest.param(
            {"kind": "KfDef", "spec": {"applications": []}},
            "apiVersion is missing; it must be one of kfdef.apps.kubeflow.org/v1, kfdef.apps.kubeflow.org/v1beta1",
            id="no apiVersion",
        ),
        pytest.param(
            {"apiVersion": "kfdef.apps.kubeflow.org/v1", "kind": "KfDef", "spec": {}},
            "spec.applications: expected the list of applications of a v1 KfDef",
            id="no applications",
        ),
    ],
)
def test_what_is_no_v1_kfdef_is_refused(real_catalog: Catalog, doc: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        migrate(doc, real_catalog, default_name="kf")
    assert err.value.message == message


def test_an_existing_output_is_refused_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write(tmp_path, v1(TF))
    output = source.with_name("app.migrated.yaml")
    output.write_text("# mine\n")
    code, out, err = run(capsys, "migrate", str(source))
    assert (code, out) == (2, "")
    assert err == (
        f"Error (usage error): {output}: already exists; left unchanged\n"
        "Hint: pass --force to overwrite it, or choose another file with --to\n"
    )
    assert output.read_text() == "# mine\n"
    assert sorted(p.name for p in source.parent.iterdir()) == ["app.migrated.yaml", "app.yaml"]  # no temp file left
    assert run(capsys, "migrate", str(source), "--force")[0] == 0
    assert output.read_text().startswith("# Migrated from")


def test_the_input_is_never_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write(tmp_path, v1(TF))
    before = source.read_bytes()
    code, out, err = run(capsys, "migrate", str(source), "--to", str(source), "--force")
    assert (code, out) == (2, "")
    assert err.startswith(f"Error (usage error): {source}: is the input; kfctl migrate never rewrites it\n")
    assert source.read_bytes() == before


# (id, applications, exit code of --check)
CHECK_CASES = [
    ("everything has a successor", [TF, app("katib", "katib/katib-controller")], 0),
    ("an application is dropped", [TF, app("spartakus", "common/spartakus")], MigrationDropped.exit_code),
    (
        "a parameter is dropped",
        [app("minio", "pipeline/minio", None, {"minioPvcName": "minio"})],
        MigrationDropped.exit_code,
    ),
    (
        "what is not needed is no loss",
        [app("mysql", "pipeline/mysql", ["application"], {"mysqlPvcName": "mysql-pv-claim"})],
        0,
    ),
]


@pytest.mark.parametrize(("case", "apps", "code"), CHECK_CASES, ids=[c[0] for c in CHECK_CASES])
def test_check_writes_nothing_and_exits_16_when_something_would_be_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, apps: list[dict[str, Any]], code: int
) -> None:
    source = write(tmp_path, v1(*apps))
    got, out, err = run(capsys, "migrate", str(source), "--check")
    assert (got, err) == (code, "")
    assert out.splitlines()[-1].startswith("Checked (--check, nothing written: ")
    assert sorted(p.name for p in source.parent.iterdir()) == ["app.yaml"]
    got, out, _ = run(capsys, "migrate", str(source), "--check", "-o", "json")
    assert (got, json.loads(out)["written"], json.loads(out)["dropped"]) == (code, False, code != 0)


def test_help_has_an_example_and_says_why_not_dash_o(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "migrate", "--help")
    assert code == 0
    assert "Examples:" in out
    assert "Not -o: -o/--output is every command's output format" in " ".join(out.split())


# -- the tables themselves ---------------------------------------------------------------------------------


def test_every_successor_and_carried_parameter_is_in_the_catalog(real_catalog: Catalog) -> None:
    for key, outcome in legacy.PACKAGES.items():
        if isinstance(outcome, legacy.Successor):
            assert set(outcome.components) <= set(real_catalog.components), key
    for (component, name), rule in legacy.PARAMETERS.items():
        assert component in real_catalog.components, name
        if isinstance(rule, legacy.Carry):
            assert rule.parameter in real_catalog.components[component].parameters, name
    for stack, parts in legacy.STACKS.items():
        assert all(legacy.package_outcome(p, "") for p in parts), stack
    for kind, (platform, _why) in legacy.LEGACY_PLUGINS.items():
        assert platform in real_catalog.platforms, kind
    for platform, (param, _why) in legacy.NAME_SETTINGS.items():
        assert param in real_catalog.platforms[platform].parameters, platform
    # v1's GcpPluginSpec.project/zone and AwsPluginSpec.region are carried under their own names.
    assert {"project", "zone"} <= set(real_catalog.platforms["gcp"].parameters)
    assert "region" in real_catalog.platforms["aws"].parameters


def test_the_output_names_every_application_written_and_the_repo_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 item 9: the count and the names are those of the file written (a kept application too); the v1
    repo the catalog replaces is named with what replaces it; a plugin field reads once as one ("plugin
    KfGcpPlugin spec.project=…", not "plugin KfGcpPlugin plugin project=…"); -o json says null for what is absent."""
    mine = {"name": "team-apps", "uri": "https://git.example.com/team/apps.git"}
    own = {"name": "my-custom-thing", "kustomizeConfig": {"repoRef": {"name": "team-apps", "path": "thing"}}}
    doc = v1(TF, own, plugins=[{"kind": "KfGcpPlugin", "spec": {"project": "my-project-1", "email": "a@b.c"}}])
    doc["spec"]["repos"] = [
        {"name": "manifests", "uri": "https://github.com/kubeflow/manifests/archive/v1.0-branch.tar.gz"},
        mine,
    ]
    source = write(tmp_path, doc)
    output = source.with_name("app.migrated.yaml")
    code, out, _ = run(capsys, "migrate", str(source))
    assert code == 0
    replaced = (
        "Repo manifests: https://github.com/kubeflow/manifests/archive/v1.0-branch.tar.gz replaced by kfctl://catalog, "
        "the catalog built into kfctl"
    )
    assert replaced in out.splitlines()
    assert f"# {replaced}" in output.read_text().splitlines()
    assert "  plugin KfGcpPlugin spec.project=my-project-1 -> carried: gcp.project" in out.splitlines()
    assert "plugin KfGcpPlugin plugin" not in out + output.read_text()
    assert f"Wrote {output}: 3 application(s): common, training-operator, my-custom-thing" in out.splitlines()
    code, out, _ = run(capsys, "migrate", str(source), "--check", "-o", "json")
    data = json.loads(out)
    assert data["writtenApplications"] == ["common", "training-operator", "my-custom-thing"]
    assert data["replacedRepos"] == [
        {
            "name": "manifests",
            "uri": "https://github.com/kubeflow/manifests/archive/v1.0-branch.tar.gz",
            "by": "kfctl://catalog",
        }
    ]
    values = [v for a in data["applications"] for v in a.values()] + [v for s in data["settings"] for v in s.values()]
    assert "" not in values and None in values  # absent is null, never ""
