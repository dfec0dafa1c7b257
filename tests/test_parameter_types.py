"""Parameter types, as a specification: a value in, the typed value or the exact located message out.

Every parameter of the catalog declares its type (quantity, duration, enum, image …; docs/catalog.md), a KfDef
value of the wrong type is refused at load time where it stands (file:line:col, the parameter, what it must be,
a valid example, a did-you-mean for an enum), and every default and example of the catalog is of its own type.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kfctl.catalog.load import load_catalog
from kfctl.catalog.model import Catalog, ParameterSpec, with_dependencies
from kfctl.catalog.paramtypes import check, example_of
from kfctl.config.loader import parse_kfdef
from kfctl.errors import ConfigError

DIGEST = "sha256:" + "ab" * 32


def spec(ptype: Any, **fields: Any) -> ParameterSpec:
    return ParameterSpec(name="p", type=ptype, description="", **fields)


# (type and fields, value, the plain text YAML read it from (None: it was a string), the typed value)
GOOD: list[Any] = [
    pytest.param(spec("quantity"), "10Gi", None, "10Gi", id="quantity-binary-suffix"),
    pytest.param(spec("quantity"), "500m", None, "500m", id="quantity-milli"),
    pytest.param(spec("quantity"), "1.5Gi", None, "1.5Gi", id="quantity-decimal"),
    pytest.param(spec("quantity"), "1e3", None, "1e3", id="quantity-exponent"),
    pytest.param(spec("quantity"), 1, "1", "1", id="quantity-unquoted-number-as-written"),
    pytest.param(spec("quantity"), 0.5, "0.5", "0.5", id="quantity-unquoted-decimal-as-written"),
    pytest.param(spec("duration"), "1h30m", None, "1h30m", id="duration-compound"),
    pytest.param(spec("duration"), "300ms", None, "300ms", id="duration-milliseconds"),
    pytest.param(spec("duration"), "1.5h", None, "1.5h", id="duration-decimal"),
    pytest.param(spec("duration"), 0, "0", "0", id="duration-zero"),
    pytest.param(spec("image"), "quay.io/jetstack/acmesolver:v1.19.4", None, "quay.io/jetstack/acmesolver:v1.19.4"),
    pytest.param(spec("image"), "busybox:1.36", None, "busybox:1.36", id="image-docker-hub"),
    pytest.param(spec("image"), "localhost:5000/app:dev", None, "localhost:5000/app:dev", id="image-host-port"),
    pytest.param(spec("image"), f"ghcr.io/org/app@{DIGEST}", None, f"ghcr.io/org/app@{DIGEST}", id="image-digest"),
    pytest.param(spec("image"), f"app:v1@{DIGEST}", None, f"app:v1@{DIGEST}", id="image-tag-and-digest"),
    pytest.param(spec("image-tag"), "v1.32.4", None, "v1.32.4", id="image-tag"),
    pytest.param(spec("registry"), "mirror.corp:5000/kf", None, "mirror.corp:5000/kf", id="registry-port-path"),
    pytest.param(spec("registry"), "localhost:5000", None, "localhost:5000", id="registry-localhost"),
    pytest.param(spec("registry"), "registry.example.com/a/b/", None, "registry.example.com/a/b/", id="registry-slash"),
    pytest.param(spec("dns-subdomain"), "katib-mysql-secrets", None, "katib-mysql-secrets", id="dns-subdomain"),
    pytest.param(spec("dns-subdomain"), "cluster.local", None, "cluster.local", id="dns-subdomain-dotted"),
    pytest.param(spec("arn"), "arn:aws:iam::123456789012:role/ca", None, "arn:aws:iam::123456789012:role/ca"),
    pytest.param(spec("arn"), "arn:aws-cn:iam::123456789012:role/x", None, "arn:aws-cn:iam::123456789012:role/x"),
    pytest.param(spec("enum", values=("none", "mixed")), "mixed", None, "mixed", id="enum"),
    pytest.param(spec("enum", values=("yes", "no")), True, "yes", "yes", id="enum-unquoted-yes-as-written"),
    pytest.param(spec("integer"), "3", None, 3, id="integer-quoted"),
    pytest.param(spec("integer"), -1, "-1", -1, id="integer-negative-without-minimum"),
    pytest.param(spec("integer", minimum=1, maximum=3), 3, "3", 3, id="integer-at-maximum"),
    pytest.param(spec("boolean"), "True", None, True, id="boolean-quoted"),
    pytest.param(spec("boolean"), False, "false", False, id="boolean"),
    pytest.param(spec("string"), 1.10, "1.10", "1.10", id="string-unquoted-number-as-written"),
    pytest.param(spec("string"), "", None, "", id="string-empty"),
    pytest.param(spec("string", pattern="[a-z]+-[0-9]", example="us-1"), "eu-2", None, "eu-2", id="string-pattern"),
    pytest.param(spec("dns-subdomain", empty_means="none"), "", None, "", id="empty-where-it-means-something"),
]


@pytest.mark.parametrize(("parameter", "value", "text", "typed"), GOOD)
def test_values_of_the_type_are_taken(parameter: ParameterSpec, value: Any, text: str | None, typed: Any) -> None:
    assert check(parameter, value, text=text) == (typed, None)


# (type and fields, value) that are not of the type; the loader table below has their messages
NOT_OF_THE_TYPE: list[Any] = [
    pytest.param(spec("quantity"), "1.2.3", id="quantity-two-points"),
    pytest.param(spec("quantity"), "10Gi\n", id="quantity-trailing-newline"),
    pytest.param(spec("quantity"), "", id="quantity-empty"),
    pytest.param(spec("duration"), "1d", id="duration-days-are-not-go"),
    pytest.param(spec("image"), "busybox", id="image-untagged-is-latest"),
    pytest.param(spec("image"), "app@sha256:abc", id="image-short-digest"),
    pytest.param(spec("registry"), "mirror/kf", id="registry-without-a-host-is-a-docker-hub-user"),
    pytest.param(spec("arn"), "arn:aws:iam::1:role/ca", id="arn-short-account"),
    pytest.param(spec("integer", minimum=1, maximum=3), 4, id="integer-above-maximum"),
    pytest.param(spec("integer"), True, id="integer-boolean"),
    pytest.param(spec("boolean"), 1, id="boolean-number"),
    pytest.param(spec("string"), {"a": 1}, id="string-mapping"),
    pytest.param(spec("string", pattern="[a-z]+", example="ab"), "ab1", id="string-pattern-matches-whole-value"),
    pytest.param(spec("image"), "a" * 600 + ":v1", id="text-too-long-to-be-of-any-form"),
]


@pytest.mark.parametrize(("parameter", "value"), NOT_OF_THE_TYPE)
def test_values_not_of_the_type_are_refused(parameter: ParameterSpec, value: Any) -> None:
    typed, mismatch = check(parameter, value)
    assert mismatch is not None
    assert typed is value


KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {{name: demo}}
spec:
  platform: generic
  applications:
    - name: {component}
      kustomizeConfig:
        overlays: [{overlays}]
        parameters:
          - name: {parameter}
            value: {value}
"""
WHERE = "kfdef.yaml:12:13 spec.applications[0].kustomizeConfig.parameters[0].value"

# (component, its overlays, parameter, the value as YAML text, the message after WHERE)
BAD: list[Any] = [
    pytest.param(
        "katib",
        "",
        "dbPvcSize",
        "lots",
        'parameter "dbPvcSize" must be a Kubernetes quantity (a number and an optional unit such as m, Mi or Gi), '
        'e.g. "10Gi"; got "lots"',
        id="quantity-word",
    ),
    pytest.param(
        "katib",
        "",
        "dbPvcSize",
        "-10Gi",
        'parameter "dbPvcSize" must be a Kubernetes quantity (a number and an optional unit such as m, Mi or Gi), '
        'e.g. "10Gi"; got "-10Gi"',
        id="quantity-negative",
    ),
    pytest.param(
        "kserve",
        "",
        "controllerMemoryLimit",
        "[512Mi]",
        'parameter "controllerMemoryLimit" must be a Kubernetes quantity (a number and an optional unit such as m, '
        'Mi or Gi), e.g. "512Mi"; got a list',
        id="quantity-list",
    ),
    pytest.param(
        "katib",
        "",
        "dbPvcSize",
        "",
        'parameter "dbPvcSize" must be a Kubernetes quantity (a number and an optional unit such as m, Mi or Gi), '
        'e.g. "10Gi"; got nothing (null)',
        id="quantity-null",
    ),
    pytest.param(
        "kserve",
        "",
        "deploymentMode",
        "rawdeployment",
        'parameter "deploymentMode" must be one of RawDeployment, Standard, Serverless, Knative, ModelMesh; '
        'got "rawdeployment" (did you mean "RawDeployment"?)',
        id="enum-case",
    ),
    pytest.param(
        "nvidia-device-plugin",
        "",
        "migStrategy",
        "Mixed",
        'parameter "migStrategy" must be one of none, single, mixed; got "Mixed" (did you mean "mixed"?)',
        id="enum-did-you-mean",
    ),
    pytest.param(
        "nvidia-device-plugin",
        "",
        "migStrategy",
        "all",
        'parameter "migStrategy" must be one of none, single, mixed; got "all"',
        id="enum-nothing-near",
    ),
    pytest.param(
        "notebook-controller",
        "",
        "cullIdleTime",
        "0",
        'parameter "cullIdleTime" must be an integer ≥ 1, e.g. 1440; got 0',
        id="integer-below-minimum",
    ),
    pytest.param(
        "notebook-controller",
        "",
        "cullIdleTime",
        "1d",
        'parameter "cullIdleTime" must be an integer ≥ 1, e.g. 1440; got "1d"',
        id="integer-with-a-unit",
    ),
    pytest.param(
        "cert-manager",
        "",
        "logLevel",
        "2.5",
        'parameter "logLevel" must be an integer ≥ 0, e.g. 2; got 2.5',
        id="integer-decimal",
    ),
    pytest.param(
        "notebook-controller",
        "",
        "useIstio",
        "maybe",
        'parameter "useIstio" must be true or false; got "maybe"',
        id="boolean",
    ),
    pytest.param(
        "notebook-controller",
        "",
        "clusterDomain",
        "Cluster.Local",
        "parameter \"clusterDomain\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253), "
        'e.g. "cluster.local"; got "Cluster.Local"',
        id="dns-subdomain-case",
    ),
    pytest.param(
        "katib",
        "",
        "mysqlSecretRef",
        "my_secret",
        "parameter \"mysqlSecretRef\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253), "
        'e.g. "katib-mysql-secrets"; got "my_secret"',
        id="secret-name",
    ),
    pytest.param(
        "pipelines",
        "",
        "objectStoreSecretRef",
        "my-s3",
        'parameter "objectStoreSecretRef" must be "mlpipeline-minio-artifact", got \'my-s3\': KFP v2\'s launcher '
        "reads the object store's credentials from the Secret of that name in the run's namespace (upstream "
        "backend/src/v2/config/env.go), and so does the Argo artifact repository here; create your Secret under "
        "that name and set the parameter to it",
        id="secret-name-upstream-reads-by-name",
    ),
    pytest.param(
        "training-operator",
        "",
        "gangSchedulerName",
        "Volcano",
        "parameter \"gangSchedulerName\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most "
        '253), e.g. "volcano", or "" for no gang scheduling; got "Volcano"',
        id="empty-allowed-says-what-empty-means",
    ),
    pytest.param(
        "cert-manager",
        "",
        "acmeSolverImage",
        "quay.io/jetstack/cert-manager-acmesolver",
        'parameter "acmeSolverImage" must be an image reference with a tag or a digest (REGISTRY/REPOSITORY:TAG or '
        'REPOSITORY@sha256:DIGEST), e.g. "quay.io/jetstack/cert-manager-acmesolver:v1.19.4"; '
        'got "quay.io/jetstack/cert-manager-acmesolver"',
        id="image-untagged",
    ),
    pytest.param(
        "pipelines",
        "",
        "cacheImage",
        "https://ghcr.io/containerd/busybox:1.36",
        'parameter "cacheImage" must be an image reference with a tag or a digest (REGISTRY/REPOSITORY:TAG or '
        'REPOSITORY@sha256:DIGEST), e.g. "ghcr.io/containerd/busybox:1.36"; '
        'got "https://ghcr.io/containerd/busybox:1.36"',
        id="image-url",
    ),
    pytest.param(
        "tensorboard-controller",
        "",
        "tensorboardImage",
        "registry.example.com/" + "x" * 600 + ":v1",
        'parameter "tensorboardImage" must be an image reference with a tag or a digest (REGISTRY/REPOSITORY:TAG or '
        'REPOSITORY@sha256:DIGEST), e.g. "tensorflow/tensorflow:2.5.1"; got "registry.example.com/' + "x" * 58 + '…"',
        id="image-long-value-cut",
    ),
    pytest.param(
        "cluster-autoscaler",
        "",
        "imageTag",
        ":v1.32.4",
        "parameter \"imageTag\" must be an image tag (letters, digits, '_', '.' and '-', at most 128, not starting "
        "with '.' or '-'), e.g. \"v1.32.4\"; got \":v1.32.4\"",
        id="image-tag",
    ),
    pytest.param(
        "cluster-autoscaler",
        "",
        "scaleDownUnneededTime",
        "10",
        'parameter "scaleDownUnneededTime" must be a duration (numbers with units h, m, s or ms, such as 1h30m), '
        'e.g. "10m"; got 10',
        id="duration-without-unit",
    ),
    pytest.param(
        "cluster-autoscaler",
        "",
        "maxNodeProvisionTime",
        "-5m",
        'parameter "maxNodeProvisionTime" must be a duration (numbers with units h, m, s or ms, such as 1h30m), '
        'e.g. "15m"; got "-5m"',
        id="duration-negative",
    ),
    pytest.param(
        "common",
        "image-mirror",
        "imageMirrorRegistry",
        "https://mirror.corp/kf",
        "parameter \"imageMirrorRegistry\" must be a registry host (with a '.' or a :port, or localhost) and an "
        'optional /path, without a scheme, e.g. "registry.example.com:5000/kubeflow-mirror"; '
        'got "https://mirror.corp/kf"',
        id="registry-scheme",
    ),
    pytest.param(
        "common",
        "image-mirror",
        "imageMirrorRegistry",
        "mirror",
        "parameter \"imageMirrorRegistry\" must be a registry host (with a '.' or a :port, or localhost) and an "
        'optional /path, without a scheme, e.g. "registry.example.com:5000/kubeflow-mirror"; got "mirror"',
        id="registry-no-host",
    ),
]


@pytest.mark.parametrize(("component", "overlays", "parameter", "value", "message"), BAD)
def test_a_value_not_of_its_parameters_type_is_refused_where_it_stands(
    real_catalog: Catalog, component: str, overlays: str, parameter: str, value: str, message: str
) -> None:
    """One application with one bad value and its dependencies enabled: the one problem is that value."""
    assert "generic" in real_catalog.components[component].platforms
    text = KFDEF.format(component=component, overlays=overlays, parameter=parameter, value=value)
    text += "".join(f"    - name: {dep}\n" for dep in with_dependencies(real_catalog, [component]) if dep != component)
    with pytest.raises(ConfigError) as info:
        parse_kfdef(text, path=Path("kfdef.yaml"), catalog=real_catalog)
    assert info.value.exit_code == 3
    assert info.value.details == [f"{WHERE}: {message}"]


PLATFORM_KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {{name: demo}}
spec:
  platform: {platform}
  plugins:
    - kind: {plugin}
      spec:
        {parameter}: {value}
  applications:
    - name: common
"""

# (platform, parameter, the value as YAML text, the message after the field path)
PLATFORM_BAD: list[Any] = [
    pytest.param(
        "aws",
        "region",
        "US East",
        'must be text matching [a-z]{2,4}(-[a-z]+)+-[0-9]+, e.g. "us-east-1"; got "US East"',
        id="aws-region",
    ),
    pytest.param(
        "aws",
        "autoscalerRoleArn",
        "arn:aws:iam::1:role/ca",
        "must be an AWS ARN (arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE), e.g. "
        '"arn:aws:iam::123456789012:role/cluster-autoscaler"; got "arn:aws:iam::1:role/ca"',
        id="aws-arn-short-account",
    ),
    pytest.param(
        "aws",
        "clusterName",
        "prod eks",
        'must be text matching [0-9A-Za-z][0-9A-Za-z_-]{0,99}, e.g. "prod-eks"; got "prod eks"',
        id="aws-cluster-name",
    ),
    pytest.param(
        "gcp",
        "project",
        "p-1",
        'must be text matching ([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9], e.g. "my-project-123"; '
        'got "p-1"',
        id="gcp-project-too-short",
    ),
    pytest.param(
        "gcp",
        "zone",
        "US-CENTRAL1-A",
        'must be text matching [a-z]+-[a-z]+[0-9]+(-[a-z])?, e.g. "us-central1-a"; got "US-CENTRAL1-A"',
        id="gcp-zone",
    ),
    pytest.param(
        "azure",
        "subscriptionId",
        "my-subscription",
        "must be text matching [0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}, "
        'e.g. "8f3c2a4e-1b7d-4c9a-9e2f-5d6b7a8c9d0e"; got "my-subscription"',
        id="azure-subscription",
    ),
    pytest.param(
        "azure",
        "resourceGroup",
        "rg.",
        'must be text matching [-\\w.()]{0,89}[-\\w()], e.g. "ml-platform-rg"; got "rg."',
        id="azure-resource-group-ends-in-a-period",
    ),
    pytest.param(
        "generic",
        "clusterApiAutoDiscovery",
        "namespace=capi",
        "must be text matching clusterapi:[^,=\\s]+=[^,=\\s]+(,[^,=\\s]+=[^,=\\s]+)*, "
        'e.g. "clusterapi:namespace=capi-clusters,clusterName=prod"; got "namespace=capi"',
        id="generic-discovery-without-provider",
    ),
]


@pytest.mark.parametrize(("platform", "parameter", "value", "message"), PLATFORM_BAD)
def test_a_platform_value_not_of_its_type_is_refused_where_it_stands(
    real_catalog: Catalog, platform: str, parameter: str, value: str, message: str
) -> None:
    plugin = real_catalog.platforms[platform].plugin
    text = PLATFORM_KFDEF.format(platform=platform, plugin=plugin, parameter=parameter, value=value)
    with pytest.raises(ConfigError) as info:
        parse_kfdef(text, path=Path("kfdef.yaml"), catalog=real_catalog)
    assert info.value.details == [f"kfdef.yaml:9:9 spec.plugins[0].spec.{parameter}: {message}"]


def _declarations(catalog: Catalog) -> list[tuple[str, ParameterSpec]]:
    owners = [*catalog.components.values(), *catalog.overlays.values(), *catalog.platforms.values()]
    return [(f"{owner.name}.{p.name}", p) for owner in owners for p in owner.parameters.values()]


def test_every_parameter_of_the_catalog_declares_its_type(real_catalog: Catalog) -> None:
    """In the files themselves: the loader refuses a parameter without a type, and so does this test."""
    root = real_catalog.root
    files = [*root.glob("manifests/*/component.yaml"), *root.glob("overlays/*/overlay.yaml")]
    files += root.glob("platforms/*/platform.yaml")
    untyped = [
        f"{path.relative_to(root)}: {p.get('name')}"
        for path in files
        for p in yaml.safe_load(path.read_text()).get("parameters") or []
        if "type" not in p
    ]
    assert untyped == []
    assert len(_declarations(real_catalog)) >= 40


def test_every_default_and_example_in_the_catalog_is_of_its_own_type(real_catalog: Catalog) -> None:
    wrong = [
        f"{name} {which} {value!r}: {mismatch}"
        for name, p in _declarations(real_catalog)
        for which, value in (("default", p.default), ("example", p.example or None))
        if value is not None
        for mismatch in [check(p, value)[1]]
        if mismatch is not None
    ]
    assert wrong == []
    # and every message has a valid example to show (an enum lists its values, a boolean needs none)
    unshown = [n for n, p in _declarations(real_catalog) if p.type not in ("enum", "boolean") and example_of(p) is None]
    assert unshown == []


def write_component(root: Path, parameter: str) -> Path:
    """A catalog of one component whose only parameter is declared as ``parameter`` (YAML flow mapping)."""
    component = root / "manifests" / "c"
    component.mkdir(parents=True)
    (component / "component.yaml").write_text(f"name: c\nparameters:\n  - {parameter}\n")
    (component / "kustomization.yaml").write_text("resources: []\n")
    (root / "overlays").mkdir()
    (root / "platforms").mkdir()
    return component / "component.yaml"


TYPES = "string, integer, boolean, enum, quantity, duration, image, image-tag, registry, dns-subdomain, arn"
DECLARATIONS: list[Any] = [
    pytest.param("{name: size, default: 1Gi}", f"needs a type, one of {TYPES}", id="no-type"),
    pytest.param("{name: size, type: text}", f"type must be one of {TYPES}, got 'text'", id="unknown-type"),
    pytest.param("{name: mode, type: enum}", "an enum needs values, a list of the names it takes", id="enum-no-values"),
    pytest.param(
        "{name: mode, type: enum, values: [a, 1]}",
        "an enum needs values, a list of the names it takes",
        id="enum-value-not-a-name",
    ),
    pytest.param(
        "{name: size, type: string, values: [a], minimum: 1}",
        "type string takes no values (a field of enum), minimum (a field of integer)",
        id="fields-of-another-type",
    ),
    pytest.param(
        "{name: n, type: integer, minimum: one}", "minimum and maximum must be integers", id="bound-not-an-integer"
    ),
    pytest.param(
        "{name: zone, type: string, pattern: '[a-z]+'}",
        "a pattern needs an example, a value that matches it",
        id="pattern-without-example",
    ),
    pytest.param(
        "{name: zone, type: string, pattern: '([a-z]', example: a}",
        "pattern is not a regular expression: missing ), unterminated subpattern at position 0",
        id="pattern-not-a-regex",
    ),
    pytest.param(
        "{name: n, type: integer, emptyMeans: nothing}",
        "emptyMeans is for a type whose values are text of one form",
        id="empty-means-on-an-integer",
    ),
    pytest.param(
        "{name: n, type: integer, minimun: 1}",
        "unknown field(s) minimun; known: name, type, default, description, required, targets, records, values, "
        "minimum, maximum, pattern, example, emptyMeans",
        id="unknown-field",
    ),
]


@pytest.mark.parametrize(("parameter", "message"), DECLARATIONS)
def test_a_parameter_declaration_the_catalog_loader_refuses(tmp_path: Path, parameter: str, message: str) -> None:
    path = write_component(tmp_path / "catalog", parameter)
    name = yaml.safe_load(parameter)["name"]
    with pytest.raises(ConfigError) as info:
        load_catalog(tmp_path / "catalog")
    assert str(info.value).splitlines()[0] == f"{path}: parameter {name}: {message}"


def test_each_types_declaration_loads_into_its_fields(tmp_path: Path) -> None:
    """The declaration of each type, as docs/catalog.md shows it, loads into these fields."""
    write_component(
        tmp_path / "catalog",
        textwrap.dedent(
            """\
            {name: mode, type: enum, values: [a, b], default: a, description: d}
              - {name: n, type: integer, minimum: 1, maximum: 9, default: 2}
              - {name: zone, type: string, pattern: '[a-z]+-[0-9]', example: eu-1, required: true}
              - {name: gang, type: dns-subdomain, default: '', emptyMeans: no gang scheduling, example: volcano}"""
        ),
    )
    got = load_catalog(tmp_path / "catalog").components["c"].parameters
    fields = {n: (p.type, p.values, p.minimum, p.maximum, p.pattern, p.example, p.empty_means) for n, p in got.items()}
    assert fields == {
        "mode": ("enum", ("a", "b"), None, None, "", "", ""),
        "n": ("integer", (), 1, 9, "", "", ""),
        "zone": ("string", (), None, None, "[a-z]+-[0-9]", "eu-1", ""),
        "gang": ("dns-subdomain", (), None, None, "", "volcano", "no gang scheduling"),
    }
