"""`kfctl export` parts: an application whose own webhooks admit some of its objects is handed to the GitOps
engine in two parts, those objects after the rest (kfctl.app.gitops_parts; why: its module docstring, and the
real Flux in e2e/test_gitops_flux.py). Tables of small applications in, the exact parts and patches out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kfctl.app.export import ExportOptions, export
from kfctl.app.gitops_parts import Need, with_needs
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import UsageError

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: kind
  repos:
    - {name: mine, uri: ./mine}
  applications:
    - name: op
      kustomizeConfig:
        repoRef: {name: mine, path: op}
    - name: user
      dependsOn: [op]
      kustomizeConfig:
        repoRef: {name: mine, path: user}
"""
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "op-webhook", "namespace": "ops"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op", "namespace": "ops"}}
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "op-config", "namespace": "ops"}}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Cluster"},
}


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}


def webhook(policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "op-validator"},
        "webhooks": [
            {
                "name": "widgets.example.com",
                "failurePolicy": policy,
                "clientConfig": {"service": {"name": "op-webhook", "namespace": "ops", "path": "/validate"}},
                "rules": [
                    {
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["widgets"],
                    }
                ],
            }
        ],
    }


def app_dir(tmp_path: Path, objects: dict[str, list[dict[str, Any]]], catalog: Catalog, kfdef: str = KFDEF) -> Any:
    for app, objs in objects.items():
        (tmp_path / "mine" / app).mkdir(parents=True)
        (tmp_path / "kustomize" / app).mkdir(parents=True)
        (tmp_path / "rendered").mkdir(exist_ok=True)
        (tmp_path / "rendered" / f"{app}.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    (tmp_path / "kfdef.yaml").write_text(kfdef)
    return load_kfdef(tmp_path / "kfdef.yaml", catalog)


def delete(api_version: str, kind: str, name: str = "any") -> str:
    return f"$patch: delete\napiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n"


def kustomizations(result: Any) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in result.objects if o["kind"] == "Kustomization"}


def test_what_its_own_webhook_admits_is_a_second_part_after_the_first(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = app_dir(
        tmp_path,
        {
            "op": [CRD, CONFIG, SERVICE, DEPLOYMENT, webhook("Fail"), widget("builtin-a"), widget("builtin-b")],
            "user": [widget("users")],  # admitted by op's webhook too, but op comes first by dependsOn
        },
        catalog,
    )
    result = export(kfdef, catalog, ExportOptions(format="flux", repo_url="u"))
    assert result.admitted == {"op": ("Widget.example.com builtin-a", "Widget.example.com builtin-b")}
    assert result.waves == {"op": 0, "op-admitted": 1, "user": 2}
    specs = kustomizations(result)
    assert list(specs) == ["demo-op", "demo-op-admitted", "demo-user"]
    assert specs["demo-op"]["path"] == specs["demo-op-admitted"]["path"] == "./kustomize/op"
    assert "dependsOn" not in specs["demo-op"]
    assert specs["demo-op"]["patches"] == [
        {"patch": delete("example.com/v1", "Widget"), "target": {"group": "example.com", "kind": "Widget"}}
    ]
    assert specs["demo-op-admitted"]["dependsOn"] == [{"name": "demo-op"}]
    assert specs["demo-op-admitted"]["patches"] == [
        {"patch": delete("v1", "ConfigMap"), "target": {"kind": "ConfigMap"}},
        {"patch": delete("v1", "Service"), "target": {"kind": "Service"}},
        {
            "patch": delete("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
            "target": {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration"},
        },
        {
            "patch": delete("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            "target": {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"},
        },
        {"patch": delete("apps/v1", "Deployment"), "target": {"group": "apps", "kind": "Deployment"}},
    ]
    # What depends on op waits for both its parts; the user's own Widget stays in its one part.
    assert specs["demo-user"]["dependsOn"] == [{"name": "demo-op"}, {"name": "demo-op-admitted"}]
    assert "patches" not in specs["demo-user"]


def test_a_kind_both_parts_hold_is_split_object_by_object(tmp_path: Path, catalog: Catalog) -> None:
    """The webhook admits only Widgets labelled validate=yes: the other Widget stays in the first part."""
    hook = webhook("Fail")
    hook["webhooks"][0]["objectSelector"] = {"matchLabels": {"validate": "yes"}}
    checked = {**widget("checked.one"), "metadata": {"name": "checked.one", "labels": {"validate": "yes"}}}
    kfdef = app_dir(tmp_path, {"op": [CRD, SERVICE, DEPLOYMENT, hook, checked, widget("free")], "user": []}, catalog)
    result = export(kfdef, catalog, ExportOptions(format="flux", repo_url="u"))
    assert result.admitted == {"op": ("Widget.example.com checked.one",)}
    specs = kustomizations(result)
    # Names are regular expressions to kustomize (anchored by it): the dot is escaped.
    assert specs["demo-op"]["patches"] == [
        {
            "patch": delete("example.com/v1", "Widget", "checked.one"),
            "target": {"group": "example.com", "kind": "Widget", "name": "checked\\.one"},
        }
    ]
    assert specs["demo-op-admitted"]["patches"][-1] == {
        "patch": delete("example.com/v1", "Widget", "free"),
        "target": {"group": "example.com", "kind": "Widget", "name": "free"},
    }


@pytest.mark.parametrize(
    ("objects", "admitted"),
    [
        pytest.param([CRD, SERVICE, DEPLOYMENT, webhook("Ignore"), widget("a")], {}, id="failure-policy-ignore"),
        pytest.param([CRD, SERVICE, DEPLOYMENT, webhook("Fail")], {}, id="nothing-it-admits"),
    ],
)
def test_an_application_its_webhooks_cannot_block_stays_whole(
    tmp_path: Path, catalog: Catalog, objects: list[dict[str, Any]], admitted: dict[str, Any]
) -> None:
    kfdef = app_dir(tmp_path, {"op": objects, "user": [CONFIG]}, catalog)
    result = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u"))
    assert result.admitted == admitted
    assert [o["metadata"]["name"] for o in result.objects] == ["demo-op", "demo-user"]
    assert all("kustomize" not in o["spec"]["source"] for o in result.objects)


def test_argocd_parts_are_ordered_by_sync_wave_and_carry_the_same_patches(tmp_path: Path, catalog: Catalog) -> None:
    kfdef = app_dir(tmp_path, {"op": [CRD, SERVICE, DEPLOYMENT, webhook("Fail"), widget("a")], "user": []}, catalog)
    result = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u"))
    apps = {o["metadata"]["name"]: o for o in result.objects}
    waves = {n: a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] for n, a in apps.items()}
    assert waves == {"demo-op": "0", "demo-op-admitted": "1", "demo-user": "2"}
    assert apps["demo-op"]["spec"]["source"]["kustomize"]["patches"] == [
        {"patch": delete("example.com/v1", "Widget"), "target": {"group": "example.com", "kind": "Widget"}}
    ]
    assert apps["demo-op-admitted"]["metadata"]["labels"]["kfctl.kubeflow.org/application"] == "op"


def test_a_part_name_taken_by_an_application_is_a_usage_error(tmp_path: Path, catalog: Catalog) -> None:
    text = KFDEF.replace("name: user", "name: op-admitted").replace("path: user", "path: op-admitted")
    app_dir(tmp_path, {"op": [CRD, SERVICE, DEPLOYMENT, webhook("Fail"), widget("a")], "op-admitted": []}, catalog)
    (tmp_path / "kfdef.yaml").write_text(text)
    with pytest.raises(UsageError) as info:
        export(load_kfdef(tmp_path / "kfdef.yaml", catalog), catalog, ExportOptions(format="flux", repo_url="u"))
    assert info.value.message == "application 'op-admitted': kfctl export names the second part of application 'op' so"
    assert info.value.hint == "rename application 'op-admitted' in the KfDef"


def flat_kfdef(apps: list[str], depends: dict[str, str] | None = None) -> str:
    """A KfDef of repo applications, as `kfctl init --upstream` writes one: no dependsOn unless given."""
    lines = [KFDEF.split("  applications:")[0] + "  applications:"]
    for app in apps:
        lines.append(f"    - name: {app}")
        if app in (depends or {}):
            lines.append(f"      dependsOn: [{(depends or {})[app]}]")
        lines.append(f"      kustomizeConfig: {{repoRef: {{name: mine, path: {app}}}}}")
    return "\n".join(lines) + "\n"


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def config_in(ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"config-{ns}", "namespace": ns}}


@pytest.mark.parametrize(
    ("objects", "depends", "waves", "argocd_waves"),
    [
        pytest.param(  # upstream's example: no dependsOn; the plan says what needs what
            {"namespaces": [namespace("ops")], "op": [CRD, SERVICE, DEPLOYMENT], "user": [widget("users")]},
            {},
            {"namespaces": 0, "op": 1, "user": 2},
            {"demo-namespaces": "0", "demo-op": "1", "demo-user": "2"},
            id="namespace-then-crd",
        ),
        pytest.param(  # each needs the other's namespace: the first need (by name) kept, the one closing the cycle not
            {"a": [namespace("a-ns"), config_in("b-ns")], "b": [namespace("b-ns"), config_in("a-ns")]},
            {},
            {"a": 1, "b": 0},
            {"demo-a": "1", "demo-b": "0"},
            id="cycle",
        ),
        pytest.param(  # the KfDef's dependsOn wins over a need that would reverse it
            {"op": [namespace("ops"), config_in("users")], "user": [namespace("users"), config_in("ops")]},
            {"user": "op"},
            {"op": 0, "user": 1},
            {"demo-op": "0", "demo-user": "1"},
            id="depends-on-first",
        ),
    ],
)
def test_applications_without_depends_on_are_ordered_by_what_their_objects_need(
    tmp_path: Path,
    catalog: Catalog,
    objects: dict[str, list[dict[str, Any]]],
    depends: dict[str, str],
    waves: dict[str, int],
    argocd_waves: dict[str, str],
) -> None:
    kfdef = app_dir(tmp_path, objects, catalog, flat_kfdef(list(objects), depends))
    assert export(kfdef, catalog, ExportOptions(format="flux", repo_url="u")).waves == waves
    result = export(kfdef, catalog, ExportOptions(format="argocd", repo_url="u"))
    assert {
        o["metadata"]["name"]: o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] for o in result.objects
    } == (argocd_waves)


def test_a_need_is_added_in_order_unless_it_closes_a_cycle() -> None:
    """A need adds a dependency like the KfDef's dependsOn; one that closes a cycle through dependsOn or the needs
    added before it does not, nor one of an application not installed."""
    needs = [Need("op", "ns", True), Need("user", "op", True), Need("ns", "user", False), Need("op", "gone", True)]
    assert with_needs({"ns": (), "op": (), "user": ()}, needs) == {"ns": (), "op": ("ns",), "user": ("op",)}
    assert with_needs({"ns": ("user",), "op": (), "user": ()}, needs) == {"ns": ("user",), "op": ("ns",), "user": ()}
