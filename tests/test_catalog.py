"""The real catalog rendered through the real kustomize: every platform, every component, every parameter.

These are component tests (no cluster). Built-in kinds are validated against the Kubernetes 1.32 OpenAPI
schema (kubernetes-validate, strict: unknown fields are errors); the server-side validation of the same
objects, custom resources included, against a real API server lives in e2e/test_catalog_dry_run.py.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from credentials import credentials_in

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.app.init import init_app
from kfctl.catalog.model import Catalog, ParameterSpec, first_sentence
from kfctl.config.loader import load_kfdef
from kfctl.render.kustomize import find_kustomize

PLATFORM_VALUES: dict[str, dict[str, Any]] = {
    "aws": {
        "clusterName": "prod-eks",
        "region": "eu-west-1",
        "autoscalerRoleArn": "arn:aws:iam::123456789012:role/cluster-autoscaler",
    },
    "gcp": {"project": "my-project", "zone": "europe-west4-a", "region": "europe-west4", "cluster": "prod-gke"},
    "azure": {"subscriptionId": "00000000-0000-0000-0000-000000000000", "resourceGroup": "rg", "clusterName": "aks"},
}


def make_app(tmp: Path, catalog: Catalog, *, platform: str, components: list[str] | None, extra: str = "") -> Path:
    """init + fill in the platform's required parameters the way a user would (editing the plugin spec)."""
    app = tmp / f"{platform}-{'all' if components else 'default'}"
    init_app(catalog, app_dir=app, platform=platform, components=components, namespace="kubeflow", force=True)
    path = app / "kfdef.yaml"
    doc = yaml.safe_load(path.read_text())
    values = PLATFORM_VALUES.get(platform, {})
    for plugin in doc["spec"].get("plugins", []):
        for key in list(plugin.get("spec", {})):
            if key in values:
                plugin["spec"][key] = values[key]
    path.write_text(yaml.safe_dump(doc, sort_keys=False) + extra)
    return app


def supported(catalog: Catalog, platform: str) -> list[str]:
    return sorted(c.name for c in catalog.components.values() if not c.platforms or platform in c.platforms)


def rendered(app: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((app / "rendered").glob("*.yaml")):
        for obj in yamlio.safe_load_all(path.read_text()):  # libyaml's loader: the CRDs are megabytes
            if obj:
                yield path.stem, obj


def kustomize_build(directory: Path) -> str:
    k = find_kustomize()
    return subprocess.run([*k.argv, str(directory)], capture_output=True, text=True, check=True).stdout


CASES = [(p, which) for p in ("kind", "gcp", "aws", "azure", "generic") for which in ("default", "all")]


@pytest.mark.parametrize(("platform", "which"), CASES, ids=[f"{p}-{w}" for p, w in CASES])
def test_every_platform_renders_and_kustomize_reproduces_it_elsewhere(
    tmp_path: Path, real_catalog: Catalog, platform: str, which: str
) -> None:
    components = supported(real_catalog, platform) if which == "all" else None
    app = make_app(tmp_path, real_catalog, platform=platform, components=components)
    result = generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
    assert result.objects > 0
    copy = tmp_path / "moved" / app.name
    shutil.copytree(app, copy)
    shutil.rmtree(app)
    for name in result.applications:
        assert kustomize_build(copy / "kustomize" / name) == (copy / "rendered" / f"{name}.yaml").read_text(), name
    for _, obj in rendered(copy):
        for container in pod_containers(obj):
            image = container["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), f"{image} is not pinned"
    # Nothing secret in what users commit (rendered/, kustomize/, vendor/): kfctl generates the Secrets in the
    # cluster (tests/test_secrets_generated.py).
    assert credentials_in(copy) == []


KUBERNETES_SCHEMA_VERSION = "1.32.0"


@pytest.mark.parametrize("platform", ["kind", "gcp", "aws", "azure", "generic"])
def test_every_built_in_object_validates_against_the_kubernetes_1_32_schema(
    tmp_path: Path, real_catalog: Catalog, platform: str
) -> None:
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    app = make_app(tmp_path, real_catalog, platform=platform, components=supported(real_catalog, platform))
    generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
    checked, problems, custom = 0, [], set()
    for app_name, obj in rendered(app):
        try:
            kubernetes_validate.validate(obj, KUBERNETES_SCHEMA_VERSION, strict=True)
            checked += 1
        except SchemaNotFoundError:
            custom.add(obj["apiVersion"].split("/")[0])  # a custom resource: its CRD's schema checks it (e2e)
        except ValidationError as e:
            problems.append(f"{app_name}: {obj['kind']} {obj['metadata'].get('name')}: {e}")
    assert problems == []
    assert checked > 150
    assert all("." in group for group in custom), custom  # only CRD groups may lack a built-in schema


def pod_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    return list(pod.get("containers") or []) + list(pod.get("initContainers") or [])


def by_kind(app: Path, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for _, o in rendered(app) if o["kind"] == kind}


@pytest.fixture(scope="module")
def platform_renders(tmp_path_factory: pytest.TempPathFactory, real_catalog: Catalog) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("platforms")
    out = {}
    for platform in ("kind", "gcp", "aws", "azure", "generic"):
        app = make_app(tmp, real_catalog, platform=platform, components=None)
        generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
        out[platform] = app
    return out


def test_kind_and_gcp_have_neither_autoscaler_nor_device_plugin(platform_renders: dict[str, Path]) -> None:
    for platform in ("kind", "gcp"):
        assert "cluster-autoscaler" not in by_kind(platform_renders[platform], "Deployment"), platform
        assert "nvidia-device-plugin-daemonset" not in by_kind(platform_renders[platform], "DaemonSet"), platform


def test_aws_autoscaler_has_aws_flags_cluster_name_and_role_arn(platform_renders: dict[str, Path]) -> None:
    ca = by_kind(platform_renders["aws"], "Deployment")["cluster-autoscaler"]
    container = next(c for c in ca["spec"]["template"]["spec"]["containers"] if c["name"] == "cluster-autoscaler")
    args = container.get("command", []) + container.get("args", [])
    assert "--cloud-provider=aws" in args
    assert (
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod-eks"
        in args
    )
    for flag in ("--balance-similar-node-groups", "--expander=least-waste", "--skip-nodes-with-local-storage=false"):
        assert any(a == flag or a.startswith(flag + "=") for a in args), flag
    sa = by_kind(platform_renders["aws"], "ServiceAccount")[ca["spec"]["template"]["spec"]["serviceAccountName"]]
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == PLATFORM_VALUES["aws"]["autoscalerRoleArn"]


def gpu_node_terms(ds: dict[str, Any]) -> list[list[dict[str, Any]]]:
    affinity = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return [t["matchExpressions"] for t in terms]


@pytest.mark.parametrize("platform", ["aws", "azure", "generic"])
def test_device_plugin_selects_gpu_nodes_only(platform_renders: dict[str, Path], platform: str) -> None:
    ds = by_kind(platform_renders[platform], "DaemonSet")["nvidia-device-plugin-daemonset"]
    terms = gpu_node_terms(ds)
    assert terms, "the device plugin must require GPU nodes"
    for expressions in terms:  # every alternative must pin a GPU label, or CPU nodes would match
        assert any(
            ("gpu" in e["key"] or "accelerator" in e["key"] or "pci-10de" in e["key"])
            and e["operator"] in ("In", "Exists")
            for e in expressions
        ), expressions


def test_ha_gives_every_scalable_controller_two_replicas_and_a_pdb(tmp_path: Path, real_catalog: Catalog) -> None:
    components = supported(real_catalog, "kind")
    app = make_app(tmp_path, real_catalog, platform="kind", components=components)
    path = app / "kfdef.yaml"
    doc = yaml.safe_load(path.read_text())
    for entry in doc["spec"]["applications"]:
        entry["kustomizeConfig"]["overlays"] = ["ha"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    generate(load_kfdef(path, real_catalog), real_catalog)
    deployments = by_kind(app, "Deployment")
    scalable = {
        n: d
        for n, d in deployments.items()
        if d["metadata"].get("labels", {}).get("kfctl.kubeflow.org/scalable") == "true"
    }
    assert len(scalable) >= 5
    pdbs = list(by_kind(app, "PodDisruptionBudget").values())
    for name, dep in sorted(scalable.items()):
        assert dep["spec"]["replicas"] >= 2, name
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        covering = [
            p
            for p in pdbs
            if p["metadata"].get("namespace") == dep["metadata"].get("namespace")
            and all(pod_labels.get(k) == v for k, v in p["spec"]["selector"].get("matchLabels", {}).items())
        ]
        assert covering, f"no PodDisruptionBudget selects the pods of Deployment {name}"
    for name, dep in deployments.items():
        if name not in scalable:
            assert dep["spec"].get("replicas", 1) == 1, f"{name} is not scalable but was scaled"


def test_image_mirror_rewrites_every_image_of_every_component(tmp_path: Path, real_catalog: Catalog) -> None:
    components = supported(real_catalog, "generic")
    app = make_app(tmp_path, real_catalog, platform="generic", components=components)
    path = app / "kfdef.yaml"
    doc = yaml.safe_load(path.read_text())
    for entry in doc["spec"]["applications"]:
        entry["kustomizeConfig"]["overlays"] = ["image-mirror"]
        entry["kustomizeConfig"]["parameters"] = [{"name": "imageMirrorRegistry", "value": "mirror.corp:5000/kf"}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    generate(load_kfdef(path, real_catalog), real_catalog)
    seen = 0
    for app_name, obj in rendered(app):

        def walk(node: Any) -> Iterator[str]:
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("containers", "initContainers") and isinstance(value, list):
                        yield from (c["image"] for c in value if isinstance(c, dict) and "image" in c)
                    yield from walk(value)
            elif isinstance(node, list):
                for item in node:
                    yield from walk(item)

        for image in walk(obj):
            seen += 1
            assert image.startswith("mirror.corp:5000/kf/"), f"{app_name}: {obj['kind']} {image}"
    assert seen >= 20


# A value of each type that no default of the catalog has
OTHER_VALUE: dict[str, Any] = {
    "integer": 7,
    "quantity": "77Gi",
    "duration": "7m",
    "image": "registry.example.com/kfctl-test:v7",
    "image-tag": "v7.7.7",
    "dns-subdomain": "kfctl-test-value",
    "string": "kfctl-test-value",
}


def another_value(spec: ParameterSpec) -> Any:
    """A valid value of ``spec``'s type other than its default."""
    if spec.type == "boolean":
        return not bool(spec.default)
    if spec.type == "enum":
        return next(v for v in spec.values if v != spec.default)
    return OTHER_VALUE[spec.type]


def test_every_component_parameter_reaches_its_target(tmp_path: Path, real_catalog: Catalog) -> None:
    """Set each declared parameter to a new value; the rendered output must change (targets resolve)."""
    checked = 0
    for comp in supported(real_catalog, "kind"):
        params = {n: p for n, p in real_catalog.components[comp].parameters.items() if p.targets}
        if not params:
            continue
        app = make_app(tmp_path / comp, real_catalog, platform="kind", components=[comp])
        path = app / "kfdef.yaml"
        kfdef_text = path.read_text()
        generate(load_kfdef(path, real_catalog), real_catalog)
        before = (app / "rendered" / f"{comp}.yaml").read_text()
        for pname, spec in sorted(params.items()):
            value = another_value(spec)
            doc = yaml.safe_load(kfdef_text)
            entry = next(a for a in doc["spec"]["applications"] if a["name"] == comp)
            entry["kustomizeConfig"]["parameters"] = [{"name": pname, "value": value}]
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
            generate(load_kfdef(path, real_catalog), real_catalog)
            after = (app / "rendered" / f"{comp}.yaml").read_text()
            assert before != after, f"{comp}.{pname}={value!r} changed nothing"
            checked += 1
    assert checked >= 5


def test_every_components_crds_list_names_exactly_the_crds_it_renders(tmp_path: Path, real_catalog: Catalog) -> None:
    """`crds:` in component.yaml is what `external: true` checks on a cluster: it must match the render."""
    app = make_app(tmp_path, real_catalog, platform="aws", components=supported(real_catalog, "aws"))
    generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
    rendered_crds: dict[str, set[str]] = {name: set() for name in supported(real_catalog, "aws")}
    for app_name, o in rendered(app):
        if o["kind"] == "CustomResourceDefinition":
            rendered_crds[app_name].add(o["metadata"]["name"])
    declared = {name: set(real_catalog.components[name].crds) for name in rendered_crds}
    assert declared == rendered_crds


@pytest.mark.parametrize(
    ("description", "width", "expected"),
    [
        pytest.param(
            "AWS region of the cluster (e.g. us-east-1).", 72, "AWS region of the cluster (e.g. us-east-1)", id="e.g."
        ),
        pytest.param("Runs jobs. Needs common.", 72, "Runs jobs", id="first-sentence"),
        pytest.param("Gang scheduling: which scheduler", 72, "Gang scheduling", id="clause-before-a-colon"),
        pytest.param("A mode (see: docs. here) of it. More", 72, "A mode (see: docs. here) of it", id="parentheses"),
        pytest.param("one two three four", 12, "one two…", id="cut-between-words"),
        pytest.param("one two three four", 9, "one two…", id="cut-at-a-space"),
        pytest.param("a-very-long-single-word", 8, "a-very-…", id="one-word-cut-where-it-must"),
    ],
)
def test_first_sentence_ends_at_a_sentence_and_cuts_between_words(description: str, width: int, expected: str) -> None:
    """Issue 31 item 9: init's comments and catalog's listing were cut mid-word ("AWS region of the cluster (e.g")."""
    assert first_sentence(description, width=width) == expected


def test_init_comments_end_at_words(tmp_path: Path, real_catalog: Catalog) -> None:
    result = init_app(
        real_catalog, app_dir=tmp_path / "prod", platform="aws", components=None, namespace="kubeflow", force=False
    )
    text = result.kfdef.read_text()
    assert 'region: ""  # required by cluster-autoscaler: AWS region of the cluster (e.g. us-east-1)\n' in text
