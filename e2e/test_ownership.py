"""Ownership and convergence on a real API server: kfctl never silently takes over what another owner
manages, and puts back what someone changed in what it owns (issue 12).

- Refusal before any write (exit 11), each foreign object named with its owner: one Argo CD tracks, one
  another kfctl install applied.
- Drift: `kubectl set image` and `kubectl scale` on the training operator are put back on re-apply
  (Corrected, the fields named; exit 15 with --detailed-exitcode); an untouched re-apply then makes no write
  request (exit 0).
- A real Helm release, installed by the real helm CLI (built by e2e/build-binaries) from the chart in
  e2e/helm/cert-manager, filled at test time with kfctl's own rendered cert-manager objects, so Helm owns
  exactly what kfctl would apply: refused whole and left untouched; provided to kserve and katib as an
  `external: true` application; adopted with --adopt, kept by `kfctl delete`, removed by
  `kfctl delete --delete-adopted`. These three run in this order on one release.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from apply_support import CertManagerWebhookCA, exists, kfctl, kubectl, wait_gone, write_local_kfdef
from harness import poll
from ownership_support import (
    Helm,
    chart_with,
    identities,
    key_order,
    kfctl_text,
    rendered,
    settled_identities,
    subject,
)
from reliability_support import kubectl_apply

pytestmark = pytest.mark.e2e

HINT = (
    "if the cluster already provides an application, mark it `external: true` in the KfDef: kfctl then checks it "
    "instead of installing it; to take the objects over, re-run with --adopt (or set `adopt: true` on the "
    "application): delete and prune keep adopted objects unless --delete-adopted / --prune-adopted"
)
# Objects a GitOps engine reconciles: change them in git, not with kfctl (e2e/test_gitops_flux.py: Flux's).
ARGO_CD_HINT = (
    "a GitOps engine (Argo CD) reconciles these objects from git: change them there (kfctl generate, kfctl export, "
    "commit) rather than with kfctl apply, as --adopt would have both keep writing them. To hand an application "
    "over to kfctl, first remove it from the engine without deleting its objects (Argo CD: delete its Application "
    "without cascading), then kfctl apply --adopt"
)
WRITES = ("Created", "Configured", "Corrected", "Adopted", "Recreated", "Pruned", "Deleted")
HELM_OWNER = "Helm release cert-manager/cert-manager"
CA_BUNDLES = "jsonpath={.webhooks[*].clientConfig.caBundle}"
FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    yield
    print("\nFIGURES " + json.dumps(FIGURES, sort_keys=True))


def refusal(owners: str, n: int) -> str:
    return f"{n} object(s) the KfDef would install exist already under another owner ({owners}); nothing was written"


def configmap(name: str, ns: str, value: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {"value": value or name},
    }


def deployment(name: str, ns: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "x/web:1"}]}},
        },
    }


# --- refusals of small bundles ----------------------------------------------------------------------------


def test_an_object_argo_cd_tracks_stops_the_apply_before_any_write(
    tmp_path: Path, kubeconfig: str, namespace: str
) -> None:
    """No Argo CD controller can be built here: the tracking annotation is set by the test, as a stand-in for
    the one Argo CD writes on what it syncs (`argocd.argoproj.io/tracking-id: <app>:<group>/<kind>:<ns>/<name>`,
    its default tracking method since v3)."""
    web, settings = deployment("web", namespace), configmap("web-settings", namespace)
    kubectl_apply(kubeconfig, [web])
    kubectl(
        kubeconfig,
        "-n",
        namespace,
        "annotate",
        "deployment",
        "web",
        f"argocd.argoproj.io/tracking-id=guestbook:apps/Deployment:{namespace}/web",
    )
    before = identities(kubeconfig, [web])
    write_local_kfdef(tmp_path, name="own-argo", namespace=namespace, apps={"web": [settings, web]})

    run = kfctl("apply", str(tmp_path), kubeconfig=kubeconfig)
    assert run.code == 11, run.explain()
    assert run.error == {
        "kind": "ownership conflict",
        "exitCode": 11,
        "message": refusal("Argo CD application guestbook", 1),
        "details": [f"Deployment.apps {namespace}/web (web): Argo CD application guestbook"],
        "hint": ARGO_CD_HINT,
    }
    assert not [e for e in run.events if e["event"] in WRITES], run.events
    assert identities(kubeconfig, [web]) == before
    assert not exists(kubeconfig, "configmap", "web-settings", "kfctl-inventory-own-argo", namespace=namespace)
    assert not exists(kubeconfig, "lease", "kfctl-lock-own-argo", namespace=namespace)  # the run lock is gone too


def test_an_object_of_another_kfctl_install_stops_the_apply_naming_that_install(
    tmp_path: Path, kubeconfig: str, namespace: str
) -> None:
    """Two KfDefs (different metadata.name) render a ConfigMap of the same name and namespace: the one applied
    first owns it, and the other refuses, naming it, until it is deleted."""
    other, first = tmp_path / "other", tmp_path / "first"
    write_local_kfdef(
        other, name="own-other", namespace=namespace, apps={"shared": [configmap("settings", namespace, "other's")]}
    )
    write_local_kfdef(
        first,
        name="own-first",
        namespace=namespace,
        apps={"first": [configmap("settings", namespace, "first's"), configmap("first-only", namespace)]},
    )
    try:
        run = kfctl("apply", str(other), kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        live = json.loads(kubectl(kubeconfig, "-n", namespace, "get", "configmap", "settings", "-o", "json"))
        applyset = live["metadata"]["labels"]["applyset.kubernetes.io/part-of"]
        before = identities(kubeconfig, [configmap("settings", namespace)])

        run = kfctl("apply", str(first), kubeconfig=kubeconfig)
        assert run.code == 11, run.explain()
        owner = f"kfctl install own-other (ApplySet {applyset})"
        assert run.error["message"] == refusal(owner, 1)
        assert run.error["details"] == [f"ConfigMap {namespace}/settings (first): {owner}"]
        assert run.error["hint"] == HINT
        assert not [e for e in run.events if e["event"] in WRITES], run.events
        assert identities(kubeconfig, [configmap("settings", namespace)]) == before
        assert not exists(kubeconfig, "configmap", "first-only", "kfctl-inventory-own-first", namespace=namespace)
        data = kubectl(kubeconfig, "-n", namespace, "get", "configmap", "settings", "-o", "jsonpath={.data.value}")
        assert data == "other's"

        # Once the other install is gone, nothing stands in the way.
        assert kfctl("delete", str(other), kubeconfig=kubeconfig).code == 0
        run = kfctl("apply", str(first), kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert run.summary["created"] == 2
    finally:
        for d in (first, other):
            kfctl("delete", str(d), kubeconfig=kubeconfig)


# --- drift --------------------------------------------------------------------------------------------------


def test_reapply_puts_back_drift_in_kfctls_fields_then_writes_nothing(tmp_path: Path, kubeconfig: str) -> None:
    app_dir = tmp_path / "own-drift"
    kubeflow_existed = exists(kubeconfig, "namespace", "kubeflow")
    run = kfctl("init", str(app_dir), "--platform", "kind", "--components", "training-operator", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    try:
        run = kfctl("apply", str(app_dir), "--wait-timeout", "4m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        FIGURES["drift: first apply"] = {"seconds": run.summary["seconds"], "objects": run.summary["objects"]}
        objects = run.summary["objects"]
        (operator,) = [
            o for o in rendered(app_dir / "rendered" / "training-operator.yaml") if o["kind"] == "Deployment"
        ]
        (container,) = operator["spec"]["template"]["spec"]["containers"]
        assert container["name"] == "training-operator"
        catalog_image, catalog_replicas = container["image"], operator["spec"]["replicas"]

        deploy = ("-n", "kubeflow", "deploy/training-operator")
        kubectl(kubeconfig, "set", "image", *deploy, "training-operator=evil/image:latest")
        kubectl(kubeconfig, "scale", *deploy, "--replicas=3")

        run = kfctl("apply", str(app_dir), "--wait-timeout", "4m", "--detailed-exitcode", kubeconfig=kubeconfig)
        assert run.code == 15, run.explain()  # --detailed-exitcode: it changed something
        assert [(e["subject"], e["message"]) for e in run.events if e["event"] == "Corrected"] == [
            (
                "Deployment.apps kubeflow/training-operator",
                "drift put back: spec.replicas, spec.template.spec.containers[training-operator].image",
            )
        ]
        s = run.summary
        counts = (s["corrected"], s["created"], s["configured"], s["adopted"], s["unchanged"])
        assert counts == (1, 0, 0, 0, objects - 1), s
        assert s["requests"]["writes"] == 1, s["requests"]  # only the Deployment; the inventory is unchanged
        FIGURES["drift: corrected"] = {"seconds": s["seconds"], "requests": s["requests"]}
        live = json.loads(kubectl(kubeconfig, "-n", "kubeflow", "get", "deploy", "training-operator", "-o", "json"))
        assert live["spec"]["replicas"] == catalog_replicas == 1
        assert [(c["name"], c["image"]) for c in live["spec"]["template"]["spec"]["containers"]] == [
            ("training-operator", catalog_image)
        ]

        run = kfctl("apply", str(app_dir), "--detailed-exitcode", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert run.summary["requests"]["writes"] == 0 and run.summary["unchanged"] == objects, run.summary
        assert not [e for e in run.events if e["event"] in WRITES]
        FIGURES["drift: untouched re-apply"] = {"seconds": run.summary["seconds"], "requests": run.summary["requests"]}
        text = kfctl_text("apply", str(app_dir), kubeconfig=kubeconfig)
        assert text.code == 0, text.explain()
        last = text.stdout.strip().splitlines()[-1]
        pattern = rf"{objects} objects: 0 created, 0 configured, {objects} unchanged, 0 pruned in \d+\.\ds "
        assert re.fullmatch(pattern + r"\(0 write requests, \d+ in all\)", last), last
    finally:
        deleted = kfctl("delete", str(app_dir), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kubeconfig)
        if not kubeflow_existed:  # the Helm tests below start without it
            wait_gone(kubeconfig, "namespace", "kubeflow", deleted=deleted)


# --- a real Helm release ----------------------------------------------------------------------------------


@dataclass
class Release:
    helm: Helm
    app_dir: Path  # KfDef own-helm-cm: the cert-manager component alone (kfctl init)
    objects: list[dict[str, Any]]  # what Helm installed: kfctl's rendered cert-manager but its Namespace
    before: dict[str, dict[str, Any]]  # their identities once settled after `helm install`
    kubeflow_existed: bool  # the KfDef's inventory namespace, before these tests


@pytest.fixture(scope="module")
def helm_cert_manager(tmp_path_factory: pytest.TempPathFactory, kubeconfig: str) -> Iterator[Release]:
    base = tmp_path_factory.mktemp("helm")
    app_dir = base / "own-helm-cm"
    run = kfctl("init", str(app_dir), "--platform", "kind", "--components", "cert-manager", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    run = kfctl("generate", str(app_dir), kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    everything = rendered(app_dir / "rendered" / "cert-manager.yaml")
    # `helm install --create-namespace` makes the namespace; a chart that also holds it fails on it.
    objects = [o for o in everything if o["kind"] != "Namespace"]
    assert len(everything) - len(objects) == 1
    helm = Helm(kubeconfig, base / "helm-home")
    kubeflow_existed = exists(kubeconfig, "namespace", "kubeflow")
    start = time.monotonic()
    chart = chart_with(objects, base / "chart")
    helm("install", "cert-manager", str(chart), "--namespace", "cert-manager", "--create-namespace")
    FIGURES["helm install"] = {"seconds": round(time.monotonic() - start, 2), "objects": len(objects)}
    try:
        crds = [o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"]
        kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=120s", *[f"crd/{c}" for c in crds])
        available = ("--for=condition=Available", "--timeout=120s", "deployment", "--all")
        kubectl(kubeconfig, "-n", "cert-manager", "wait", *available)
        poll(
            lambda: all(
                kubectl(
                    kubeconfig, "get", f"{kind}webhookconfiguration", "cert-manager-webhook", "-o", CA_BUNDLES
                ).strip()
                for kind in ("validating", "mutating")
            ),
            timeout=60,
            what="the stand-in to inject cert-manager-webhook's caBundle",
        )
        before = settled_identities(kubeconfig, objects)
        assert len(before) == len(objects)
        for name, ident in before.items():  # Helm's own marks, as Helm itself wrote them
            assert ident["annotations"].get("meta.helm.sh/release-name") == "cert-manager", name
            assert ident["annotations"].get("meta.helm.sh/release-namespace") == "cert-manager", name
            assert ident["labels"].get("app.kubernetes.io/managed-by") == "Helm", name
            assert "helm" in ident["managers"], (name, ident["managers"])
        yield Release(helm, app_dir, objects, before, kubeflow_existed)
    finally:
        helm("uninstall", "cert-manager", "-n", "cert-manager", "--ignore-not-found", "--wait", check=False)
        kubectl(kubeconfig, "delete", "namespace", "cert-manager", "--ignore-not-found", "--timeout=180s", check=False)
        if not kubeflow_existed:
            kubectl(kubeconfig, "delete", "namespace", "kubeflow", "--ignore-not-found", "--timeout=180s", check=False)


def helm_status(release: Release) -> str:
    out = release.helm("status", "cert-manager", "-n", "cert-manager", "-o", "json")
    return str(json.loads(out.stdout)["info"]["status"])


def test_helm_release_is_refused_whole_and_left_untouched(helm_cert_manager: Release, kubeconfig: str) -> None:
    r = helm_cert_manager
    message = refusal(HELM_OWNER, len(r.objects))
    details = [f"{subject(o)} (cert-manager): {HELM_OWNER}" for o in sorted(r.objects, key=key_order)]

    run = kfctl("apply", str(r.app_dir), kubeconfig=kubeconfig)
    assert run.code == 11, run.explain()
    assert run.error == {
        "kind": "ownership conflict",
        "exitCode": 11,
        "message": message,
        "details": details,
        "hint": HINT,
    }
    assert not [e for e in run.events if e["event"] in WRITES], run.events
    FIGURES["helm: refused"] = {"seconds": round(run.seconds, 2), "objects": len(details)}

    text = kfctl_text("apply", str(r.app_dir), kubeconfig=kubeconfig)
    assert text.code == 11, text.explain()
    assert text.stderr.splitlines() == [
        f"Error (ownership conflict): {message}",
        *(f"  {d}" for d in details),
        f"Hint: {HINT}",
    ]

    # Nothing was written: Helm's objects are as Helm left them; no inventory, no inventory namespace.
    assert identities(kubeconfig, r.objects) == r.before
    assert not kubectl(
        kubeconfig, "get", "configmap", "-A", "--field-selector=metadata.name=kfctl-inventory-own-helm-cm", "-o", "name"
    ).strip()
    assert exists(kubeconfig, "namespace", "kubeflow") == r.kubeflow_existed
    assert helm_status(r) == "deployed"


def test_helm_installed_cert_manager_serves_kserve_and_katib_as_an_external_application(
    helm_cert_manager: Release, kubeconfig: str, tmp_path: Path
) -> None:
    r = helm_cert_manager
    app_dir = tmp_path / "own-external"
    run = kfctl(
        "init", str(app_dir), "--platform", "kind", "--components", "cert-manager,kserve,katib", kubeconfig=kubeconfig
    )
    assert run.code == 0, run.explain()
    kfdef = app_dir / "kfdef.yaml"
    text = kfdef.read_text()
    start = text.index("    - name: cert-manager")
    end = text.index("    - name: ", start + 10)
    kfdef.write_text(text[:start] + "    - name: cert-manager\n      external: true\n" + text[end:])
    try:
        with CertManagerWebhookCA(kubeconfig):
            run = kfctl("apply", str(app_dir), "--wait-timeout", "4m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert run.summary["ok"] and not [e for e in run.events if e["event"] in ("Failed", "Blocked", "Skipped")]
        FIGURES["helm: external apply"] = {
            "seconds": run.summary["seconds"],
            "objects": run.summary["objects"],
            "requests": run.summary["requests"],
        }
        checked = [e for e in run.events if e["subject"] == "external application cert-manager"]
        assert [(e["event"], e["message"]) for e in checked if e["event"] == "Healthy"] == [
            ("Healthy", "6 CRDs served, 2 webhook(s) guarding them answer")
        ]
        assert not (app_dir / "rendered" / "cert-manager.yaml").exists()
        written = [e for e in run.events if e["event"] in WRITES]
        assert {e["app"] for e in written} == {"common", "training-operator", "katib", "kserve"}
        # kserve and katib depend on cert-manager: nothing of theirs before the check passed.
        checked_at = min(e["ts"] for e in checked if e["event"] == "Healthy")
        for app in ("kserve", "katib"):
            assert min(e["ts"] for e in written if e["app"] == app) > checked_at, app

        status = kfctl("status", str(app_dir), kubeconfig=kubeconfig)
        assert status.code == 0, status.explain()
        apps = json.loads(status.stdout)["applications"]
        assert apps["cert-manager"] == {
            "state": "ready",
            "message": "external: 6 CRDs served, 2 webhook(s) guarding them answer",
            "external": True,
        }
        assert {a: v["state"] for a, v in apps.items()} == dict.fromkeys(
            ("cert-manager", "common", "katib", "kserve", "training-operator"), "ready"
        )
        # Helm's cert-manager (acted out by the harness's stand-in) issued kserve's and katib's certificates.
        certificates = json.loads(kubectl(kubeconfig, "-n", "kubeflow", "get", "certificates", "-o", "json"))["items"]
        assert len(certificates) >= 2
        for cert in certificates:
            ready = [c for c in cert.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
            assert [c["status"] for c in ready] == ["True"], cert["metadata"]["name"]
            assert exists(kubeconfig, "secret", cert["spec"]["secretName"], namespace="kubeflow")
        assert identities(kubeconfig, r.objects) == r.before  # external: not one of Helm's objects written
    finally:
        deleted = kfctl("delete", str(app_dir), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kubeconfig)
        if not r.kubeflow_existed:
            wait_gone(kubeconfig, "namespace", "kubeflow", deleted=deleted)
    assert deleted.code == 0, deleted.explain()
    assert identities(kubeconfig, r.objects) == r.before  # nor deleted
    assert helm_status(r) == "deployed"


def test_adopted_helm_objects_outlive_delete_until_delete_adopted(helm_cert_manager: Release, kubeconfig: str) -> None:
    r = helm_cert_manager
    n = len(r.objects)
    run = kfctl("apply", str(r.app_dir), "--adopt", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    adopted = {e["subject"]: e["message"] for e in run.events if e["event"] == "Adopted"}
    assert adopted == {
        **{subject(o): f"taken over from {HELM_OWNER}" for o in r.objects},
        "Namespace cert-manager": "taken over from the cluster (it existed before kfctl; field managers: helm)",
    }
    s = run.summary
    assert (s["adopted"], s["created"], s["configured"], s["unchanged"]) == (n + 1, 0, 0, 0), s
    FIGURES["helm: adopt"] = {"seconds": s["seconds"], "adopted": s["adopted"], "requests": s["requests"]}
    after = identities(kubeconfig, r.objects)
    assert {k: v["uid"] for k, v in after.items()} == {k: v["uid"] for k, v in r.before.items()}
    assert all("kfctl" in v["managers"] for v in after.values())

    # Now the install's own: an untouched re-apply, without --adopt, writes nothing.
    run = kfctl("apply", str(r.app_dir), kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert run.summary["requests"]["writes"] == 0

    run = kfctl("delete", str(r.app_dir), kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert run.summary["deleted"] == 0
    why = "(kfctl did not create it); kept without --delete-adopted"
    assert sorted(run.summary["kept"]) == sorted(
        [f"{subject(o)}: adopted from {HELM_OWNER} {why}" for o in r.objects]
        + [f"Namespace cert-manager: adopted from the cluster (it existed before kfctl; field managers: helm) {why}"]
    )
    kept = identities(kubeconfig, r.objects)
    assert {k: v["uid"] for k, v in kept.items()} == {k: v["uid"] for k, v in r.before.items()}
    assert helm_status(r) == "deployed"

    run = kfctl("delete", str(r.app_dir), "--delete-adopted", "--wait-timeout", "3m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    assert run.summary["deleted"] == n
    # Helm's release record keeps its namespace.
    assert run.summary["kept"] == [
        "Namespace cert-manager: holds 1 object(s) kfctl did not apply: "
        "Secret cert-manager/sh.helm.release.v1.cert-manager.v1; kept without --force-namespaces"
    ]
    FIGURES["helm: delete --delete-adopted"] = {"seconds": run.summary["seconds"], "deleted": run.summary["deleted"]}
    assert identities(kubeconfig, r.objects) == {}


def test_an_object_rendered_without_a_namespace_is_checked_where_the_server_keeps_it(
    tmp_path: Path, kubeconfig: str
) -> None:
    """A namespaced object rendered without metadata.namespace goes to "default", as kubectl sends it: the
    ownership check must look there (it once looked in "" and overwrote the object as if it were absent), and
    a re-apply of kfctl's own such object must find it (and write nothing)."""
    theirs = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "own-nons-theirs",
            "namespace": "default",
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
        },
        "data": {"a": "1"},
    }
    kubectl_apply(kubeconfig, [theirs])
    before = identities(kubeconfig, [theirs])
    rendered = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-nons-theirs"}, "data": {"a": "2"}}
    write_local_kfdef(tmp_path / "a", name="own-nons-a", namespace="default", apps={"cm": [rendered]})
    run = kfctl("apply", str(tmp_path / "a"), kubeconfig=kubeconfig)
    assert run.code == 11, run.explain()
    assert run.error["details"] == ["ConfigMap own-nons-theirs (cm): Helm release ?"]
    assert identities(kubeconfig, [theirs]) == before

    mine = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-nons-mine"}, "data": {"a": "1"}}
    write_local_kfdef(tmp_path / "b", name="own-nons-b", namespace="default", apps={"cm": [mine]})
    first = kfctl("apply", str(tmp_path / "b"), kubeconfig=kubeconfig)
    assert first.code == 0, first.explain()
    again = kfctl("apply", str(tmp_path / "b"), kubeconfig=kubeconfig)
    assert again.code == 0, again.explain()
    assert again.summary["requests"]["writes"] == 0, again.summary
    kfctl("delete", str(tmp_path / "b"), kubeconfig=kubeconfig)
    kubectl(kubeconfig, "delete", "configmap", "own-nons-theirs", "-n", "default", check=False)
