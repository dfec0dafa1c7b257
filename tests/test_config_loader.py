"""The KfDef loader, as a specification: a KfDef in, the exact model or the exact messages out."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef, parse_kfdef
from kfctl.config.model import BUILTIN_URI
from kfctl.errors import ConfigError

HEAD = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
"""


def kfdef(body: str, head: str = HEAD) -> str:
    return head + textwrap.indent(textwrap.dedent(body), "  ")


def problems(text: str, catalog: Catalog) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog)
    assert info.value.exit_code == 3
    return info.value.details or [info.value.message]


GOOD = [
    pytest.param(
        kfdef(
            """\
            platform: kind
            repos:
              - {name: manifests, uri: "kfctl://catalog"}
            applications:
              - name: common
                kustomizeConfig:
                  repoRef: {name: manifests, path: manifests/common}
              - name: training-operator
                kustomizeConfig:
                  repoRef: {name: manifests, path: manifests/training-operator}
                  overlays: [ha]
                  parameters:
                    - {name: replicas, value: "3"}
                    - {name: enableMetrics, value: "false"}
            """
        ),
        {
            "platform": "kind",
            "apps": {
                "common": ("common", (), {}),
                "training-operator": ("training-operator", ("ha",), {"replicas": 3, "enableMetrics": False}),
            },
        },
        id="full-form-with-overlay-and-coerced-parameters",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: common
              - name: training-operator
                dependsOn: [common]
              - name: katib
                enabled: false
            """
        ),
        {
            "platform": "generic",
            "apps": {
                "common": ("common", (), {}),
                "training-operator": ("training-operator", (), {}),
                "katib": ("katib", (), {}),
            },
        },
        id="short-form-defaults-to-builtin-catalog-and-generic-platform",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: common
              - name: training-operator
                kustomizeConfig:
                  parameters:
                    - {name: gangSchedulerName, value: 1.10}
                    - {name: replicas, value: 0x10}
              - name: katib
                enabled: false
                kustomizeConfig:
                  parameters: [{name: dbPassword, value: yes}]
            """
        ),
        {
            "platform": "generic",
            "apps": {
                "common": ("common", (), {}),
                "training-operator": ("training-operator", (), {"gangSchedulerName": "1.10", "replicas": 16}),
                "katib": ("katib", (), {"dbPassword": "yes"}),
            },
        },
        id="string-parameters-keep-unquoted-text-as-written",
    ),
    pytest.param(
        kfdef(
            """\
            plugins:
              - kind: KfAwsPlugin
                metadata: {name: aws}
                spec: {clusterName: prod, region: eu-west-1, roles: [x]}
            applications:
              - name: common
            """,
            head=HEAD.replace("v1\n", "v1beta1\n", 1),
        ),
        {"platform": "aws", "apps": {"common": ("common", (), {})}},
        id="v1beta1-platform-inferred-from-plugin",
    ),
]


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_good_kfdefs_load(text: str, expected: dict[str, object], catalog: Catalog) -> None:
    k = parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog)
    assert k.platform == expected["platform"]
    got = {a.name: (a.component, a.overlays, a.parameters) for a in k.applications}
    assert got == expected["apps"]
    assert all(a.repo.uri == BUILTIN_URI for a in k.applications)


BAD = [
    pytest.param(
        kfdef(
            """\
            platfrom: kind
            repos:
              - {name: manifests, uri: "kfctl://catalog"}
            applications:
              - name: common
                kustomizeConfig:
                  repoRef: {name: manifest, path: manifests/common}
              - name: training
                kustomizeConfig:
                  repoRef: {name: manifests, path: manifests/trainng-operator}
            """
        ),
        [
            'kfdef.yaml:6:3 spec.platfrom: unknown field "platfrom" (did you mean "platform"?)',
            "kfdef.yaml:12:19 spec.applications[0].kustomizeConfig.repoRef.name: "
            'repo "manifest" is not defined in spec.repos (did you mean "manifests"?)',
            "kfdef.yaml:15:36 spec.applications[1].kustomizeConfig.repoRef.path: "
            'unknown component "trainng-operator" (did you mean "training-operator"?)',
        ],
        id="three-mistakes-all-reported",
    ),
    pytest.param(
        kfdef(
            """\
            repos:
              - {name: manifests, uri: "kfctl://catalog"}
            applications:
              - name: common
                kustomizeConfig:
                  repoRef: {name: manifest, path: manifests/common}
              - name: cert-manager
                dependsOn: [common]
              - name: training-operator
              - name: katib
                kustomizeConfig: {parameters: [{name: dbPassword, value: secret}]}
            """
        ),
        [
            "kfdef.yaml:11:19 spec.applications[0].kustomizeConfig.repoRef.name: "
            'repo "manifest" is not defined in spec.repos (did you mean "manifests"?)',
        ],
        id="a-repo-typo-once-without-what-follows-from-it",  # not: no application "common", katib needs common …
    ),
    pytest.param(
        kfdef(
            """\
            repos:
              - {name: manifest, uri: "kfctl://catalog"}
            applications:
              - name: common
                kustomizeConfig: {repoRef: {name: manifests, path: manifests/common}}
              - name: training-operator
                kustomizeConfig: {repoRef: {name: manifests, path: manifests/training-operator}}
              - name: cert-manager
                kustomizeConfig: {repoRef: {name: manifests, path: manifests/cert-manager}}
            """
        ),
        [
            "kfdef.yaml:10:35 spec.applications[0].kustomizeConfig.repoRef.name: "
            'repo "manifests" is not defined in spec.repos (did you mean "manifest"?); applications training-operator, '
            "cert-manager name it too",
        ],
        id="a-typo-in-spec-repos-once-for-every-reference",
    ),
    pytest.param(
        HEAD.replace("/v1\n", "/v1alpha1\n", 1) + "  applications: []\n",
        [
            "kfdef.yaml:1:1 apiVersion: v1alpha1 is no longer supported; kfdef.apps.kubeflow.org/v1alpha1 used "
            "spec.components/componentParams/packages; rewrite each component as an entry of spec.applications[] "
            "with kustomizeConfig.repoRef and parameters[], set apiVersion to kfdef.apps.kubeflow.org/v1, or start "
            "from `kfctl init` (docs/kfdef.md: 'Migrating from v1alpha1')"
        ],
        id="v1alpha1-rejected-with-migration",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: common
              - name: common
            """
        ),
        ['kfdef.yaml:8:7 spec.applications[1].name: application "common" is defined twice (first at line 7)'],
        id="duplicate-application",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: mxjob
            """
        ),
        [
            'kfdef.yaml:7:7 spec.applications[0].name: component "mxjob" is not available: MXJob was removed '
            "upstream in training-operator v1.9.0 (Apache MXNet is retired); run MXNet workloads as a PyTorchJob or "
            "a plain Job, or pin an older kfctl/training-operator"
        ],
        id="mxjob-removed-upstream",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: pipelines
            """
        ),
        [
            'kfdef.yaml:7:7 spec.applications[0].name: unknown component "pipelines"; '
            "known: cert-manager, common, katib, training-operator"
        ],
        id="unknown-component-without-near-name-lists-known",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: common
              - name: training-operator
                kustomizeConfig:
                  overlays: [hq, ha, ha]
                  parameters:
                    - {name: replica, value: 2}
                    - {name: gangSchedulerName, value: [volcano]}
                    - {name: enableMetrics, value: maybe}
            """
        ),
        [
            'kfdef.yaml:10:20 spec.applications[1].kustomizeConfig.overlays[0]: unknown overlay "hq" '
            '(did you mean "ha"?)',
            'kfdef.yaml:10:28 spec.applications[1].kustomizeConfig.overlays[2]: overlay "ha" is listed twice',
            "kfdef.yaml:12:14 spec.applications[1].kustomizeConfig.parameters[0].name: "
            'component "training-operator" has no parameter "replica" (did you mean "replicas"?)',
            "kfdef.yaml:13:39 spec.applications[1].kustomizeConfig.parameters[1].value: "
            'parameter "gangSchedulerName" must be a string, e.g. "none"; got a list',
            "kfdef.yaml:14:35 spec.applications[1].kustomizeConfig.parameters[2].value: "
            'parameter "enableMetrics" must be true or false; got "maybe"',
        ],
        id="overlays-and-parameters",
    ),
    pytest.param(
        kfdef(
            """\
            applications:
              - name: katib
            """
        ),
        [
            'kfdef.yaml:7:7 spec.applications[0].name: component "katib" needs component "cert-manager", which no '
            "enabled application installs; add it to spec.applications",
            'kfdef.yaml:7:7 spec.applications[0].name: component "katib" needs component "common", which no '
            "enabled application installs; add it to spec.applications",
            'kfdef.yaml:7:7 spec.applications[0].name: component "katib" needs component "training-operator", '
            "which no enabled application installs; add it to spec.applications",
            'kfdef.yaml:7:7 spec.applications[0]: required parameter "dbPassword" is not set (Required, no default.)',
        ],
        id="missing-required-parameter-and-dependencies",
    ),
    pytest.param(
        kfdef(
            """\
            platform: aws
            plugins:
              - kind: KfAwsPlugin
                spec: {region: eu-west-1}
            applications:
              - name: common
                dependsOn: [comon]
              - name: training-operator
            """
        ),
        [
            'kfdef.yaml:9:7 spec.plugins[0].spec: platform "aws" requires parameter "clusterName" in the spec of a '
            "KfAwsPlugin plugin, read by training-operator (EKS cluster name.)",
            'kfdef.yaml:12:19 spec.applications[0].dependsOn[0]: no application named "comon" (did you mean "common"?)',
        ],
        id="missing-platform-parameter-and-bad-dependency",
    ),
    pytest.param(
        kfdef(
            """\
            platform: openshift
            applications:
              - name: Common_1
                enabled: "yes"
            """
        ),
        [
            'kfdef.yaml:6:3 spec.platform: unknown platform "openshift"; known: aws, generic, kind',
            "kfdef.yaml:8:7 spec.applications[0].name: 'Common_1' must be a DNS label (lowercase letters, digits, '-', "
            "at most 63)",
            'kfdef.yaml:8:7 spec.applications[0].name: unknown component "Common_1" (did you mean "common"?)',
            "kfdef.yaml:9:7 spec.applications[0].enabled: must be true or false, got a string",
        ],
        id="platform-name-and-enabled",
    ),
    pytest.param(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nkind: KfDef\nmetadata: [a]\nspec: 3\n",
        [
            "kfdef.yaml:3:1 kind: key 'kind' appears twice, on lines 2 and 3",
            "kfdef.yaml:4:1 metadata: must be a mapping, got a list",
            "kfdef.yaml:5:1 spec: must be a mapping, got an integer",
        ],
        id="shape-errors",
    ),
    pytest.param(
        kfdef(
            """\
            repos:
              - {name: mine, uri: "git+file:///srv/mine.git", ref: 4684081609}
            applications:
              - {name: common}
            """
        ),
        [
            "kfdef.yaml:7:53 spec.repos[0].ref: must be a string, got an integer (YAML read the unquoted value as one; "
            "put it in quotes)",
        ],
        id="an-all-digit-commit-prefix-left-unquoted",
    ),
    pytest.param(
        kfdef(
            """\
            repos:
              - {name: mine, uri: ./mine}
            applications:
              - {name: up, kustomizeConfig: {repoRef: {name: mine, path: "apps/../../../etc"}}}
              - {name: abs, kustomizeConfig: {repoRef: {name: mine, path: /etc}}}
              - {name: dots, kustomizeConfig: {repoRef: {name: mine, path: ..}}}
              - {name: ok, kustomizeConfig: {repoRef: {name: mine, path: apps/a..b/./x/}}}
            """
        ),
        [
            "kfdef.yaml:9:58 spec.applications[0].kustomizeConfig.repoRef.path: "
            'path "apps/../../../etc" must be relative and stay inside the repo (no leading "/", no "..")',
            "kfdef.yaml:10:59 spec.applications[1].kustomizeConfig.repoRef.path: "
            'path "/etc" must be relative and stay inside the repo (no leading "/", no "..")',
            "kfdef.yaml:11:60 spec.applications[2].kustomizeConfig.repoRef.path: "
            'path ".." must be relative and stay inside the repo (no leading "/", no "..")',
        ],
        id="repo-path-leaving-the-repo",
    ),
    pytest.param(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata:\n  name: " + "a" * 64 + "\n"
        "  namespace: Kube_Flow\nspec:\n  applications: [{name: common}]\n",
        [
            f"kfdef.yaml:4:3 metadata.name: '{'a' * 64}' must be a DNS label (lowercase letters, digits, '-', "
            "at most 63)",
            "kfdef.yaml:5:3 metadata.namespace: 'Kube_Flow' must be a DNS label (lowercase letters, digits, '-', "
            "at most 63)",
        ],
        id="install-name-and-namespace",
    ),
    pytest.param(
        "metadata: {name: demo}\nspec:\n  applications: [{name: common}]\n",
        [
            "kfdef.yaml:1:1 (document): apiVersion is missing; it must be one of kfdef.apps.kubeflow.org/v1, "
            "kfdef.apps.kubeflow.org/v1beta1",
            'kfdef.yaml:1:1 (document): kind is missing; it must be "KfDef"',
        ],
        id="apiVersion-and-kind-missing",
    ),
    pytest.param(
        "apiVersion:\nkind: ''\nmetadata: {name: demo}\nspec:\n  applications: [{name: common}]\n",
        [
            "kfdef.yaml:1:1 apiVersion: is empty; it must be one of kfdef.apps.kubeflow.org/v1, "
            "kfdef.apps.kubeflow.org/v1beta1",
            'kfdef.yaml:2:1 kind: is empty; it must be "KfDef"',
        ],
        id="apiVersion-and-kind-empty",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: demo}\nspec:\n  applications: [{name: common}]\n",
        [
            "kfdef.yaml:1:1 apiVersion: must be one of kfdef.apps.kubeflow.org/v1, kfdef.apps.kubeflow.org/v1beta1, "
            "got 'v1'",
            "kfdef.yaml:2:1 kind: must be \"KfDef\", got 'Pod'",
        ],
        id="apiVersion-and-kind-of-another-object",
    ),
    pytest.param("- just\n- a list\n", ["kfdef.yaml:1:1 (document): a KfDef must be a mapping, got a list"], id="list"),
    pytest.param("a: [\n", None, id="syntax-error"),
    pytest.param("", None, id="empty"),
]


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_bad_kfdefs_report_every_problem(text: str, expected: list[str] | None, catalog: Catalog) -> None:
    got = problems(text, catalog)
    if expected is None:  # the single-message cases are checked in test_whole_file_errors
        assert len(got) == 1
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [\n", "kfdef.yaml:2:1: invalid YAML: expected the node content, but found '<stream end>'"),
        ("", "kfdef.yaml: expected exactly one YAML document (a KfDef), found 0"),
        ("a: 1\n---\nb: 2\n", "kfdef.yaml: expected exactly one YAML document (a KfDef), found 2"),
    ],
)
def test_whole_file_errors(text: str, message: str, catalog: Catalog) -> None:
    assert problems(text, catalog) == [message]


def test_missing_file_says_how_to_create_one(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(ConfigError) as info:
        load_kfdef(tmp_path / "kfdef.yaml", catalog)
    assert info.value.message == f"{tmp_path / 'kfdef.yaml'}: no such file"
    assert info.value.hint == "create one with `kfctl init APPDIR --platform kind`"


def test_loader_never_writes_the_file(tmp_path: Path, catalog: Catalog) -> None:
    path = tmp_path / "kfdef.yaml"
    text = kfdef("applications:\n  - name: common\n")
    path.write_text(text)
    before = path.stat().st_mtime_ns
    load_kfdef(path, catalog)
    assert path.read_text() == text
    assert path.stat().st_mtime_ns == before


def test_the_guides_kfdef_example_loads(real_catalog: Catalog) -> None:
    guide = (Path(__file__).parent.parent / "docs" / "kfdef.md").read_text(encoding="utf-8")
    example = guide.split("# The KfDef", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    k = parse_kfdef(example, path=Path("demo/kfdef.yaml"), catalog=real_catalog)
    got = {a.name: (a.repo.name, a.path, a.component, a.overlays, a.parameters, a.depends_on) for a in k.applications}
    assert (k.name, k.namespace, k.platform) == ("demo", "kubeflow", "aws")
    assert got == {
        "common": ("manifests", "manifests/common", "common", (), {}, ()),
        "cert-manager": ("manifests", "manifests/cert-manager", "cert-manager", (), {}, ()),
        "training-operator": ("manifests", "manifests/training-operator", "training-operator", (), {}, ()),
        "katib": ("manifests", "manifests/katib", "katib", ("ha",), {"dbPvcSize": "20Gi"}, ()),
        "my-app": ("mine", "apps/my-app", None, (), {}, ("katib",)),
    }


def test_platform_parameters_keep_unquoted_text_as_written(catalog: Catalog) -> None:
    text = kfdef(
        """\
        plugins:
          - kind: KfAwsPlugin
            spec: {clusterName: 2024.10, region: no}
        applications:
          - name: common
        """
    )
    k = parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog)
    assert k.platform_parameters == {"clusterName": "2024.10", "region": "no"}


PLATFORM_PARAMETER_CASES = [
    # (platform, components, parameters init asks for, load problems without them)
    ("aws", "training-operator", [], []),
    (
        "aws",
        "training-operator,cluster-autoscaler",
        ["autoscalerRoleArn", "clusterName", "region"],
        ["autoscalerRoleArn", "clusterName", "region"],
    ),
    ("gcp", "training-operator", [], []),  # project, zone and cluster are only recorded in a ConfigMap
    (
        "azure",
        "training-operator,cluster-autoscaler",
        ["clusterName", "subscriptionId"],
        ["clusterName", "subscriptionId"],
    ),
]


@pytest.mark.parametrize(("platform", "components", "asked", "missing"), PLATFORM_PARAMETER_CASES)
def test_a_platform_parameter_is_required_only_when_a_chosen_component_reads_it(
    tmp_path: Path, real_catalog: Catalog, platform: str, components: str, asked: list[str], missing: list[str]
) -> None:
    from kfctl.app.init import init_app

    result = init_app(
        real_catalog,
        app_dir=tmp_path / "app",
        platform=platform,
        components=components.split(","),
        namespace="kubeflow",
        force=False,
    )
    assert list(result.required_platform_parameters) == asked
    if not missing:
        load_kfdef(result.kfdef, real_catalog)
        return
    with pytest.raises(ConfigError) as info:
        load_kfdef(result.kfdef, real_catalog)
    named = [re.search(r'requires parameter "(\w+)"', d) for d in info.value.details or [info.value.message]]
    assert sorted(m.group(1) for m in named if m) == missing
    assert all("read by cluster-autoscaler" in d for d in info.value.details or [info.value.message])
