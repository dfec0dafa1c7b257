"""A git repository holding only a KfDef, deployed by Argo CD's real controller through kfctl's Config Management
Plugin (`kfctl export --format argocd-plugin`; docs/gitops.md, "A repository holding only a KfDef").

On a cluster of the module's own (the process runtime runs the real operators), Argo CD's application controller,
repo-server and argocd-cmp-server run as processes (kfctl_testbed.argocd): the cmp-server plays the repo-server's
kfctl sidecar, serving the plugin.yaml the export's ConfigMap holds, with this venv's kfctl on its PATH. The
repository holds `clusters/e2e/kfdef.yaml` and nothing else of the platform (the default kind platform: the
built-in catalog needs no fetch, so no lock). The export's Application and argocd-cm.yaml are applied as the
docs say, `kfctl secrets apply` once namespace kubeflow exists.

1. The Application becomes Synced and Healthy at the pushed commit; the objects it manages are exactly those a
   local `kfctl generate` renders (less the Secrets kfctl generates in the cluster), each on the API server with
   the sync wave of its part, and no object of a wave was created before every object of the earlier waves
   (the API server's creationTimestamps).
2. A commit that sets one parameter (training-operator's controllerThreads) is synced at its revision, and Argo CD
   writes exactly the objects the catalog names as that parameter's targets: the API server's managedFields say
   which objects Argo CD's apply changed (a server-side apply that changes nothing writes nothing).
3. A commit whose KfDef names an application the catalog lacks fails the render: the Application's
   ComparisonError condition carries kfctl's own message (the file, line, field and the known components), no
   sync follows, and every object is still there.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from apply_support import REPO
from gitops_support import Key, app_repo, key_of, run_kfctl, synced_by_argocd
from harness import Cluster
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import kube_rest
from kfctl_testbed.argocd import APPLICATIONS, ArgoCD
from kfctl_testbed.flux import Repo, timestamp

from kfctl import yamlio

pytestmark = pytest.mark.e2e

NAME = "e2e"  # the KfDef's name, so the Application's
APP_PATH = f"clusters/{NAME}"
INSTALL_TIMEOUT = 900.0  # 271 s on a quiet machine, 521 s beside a parallel e2e run
SYNC_WAVE = "argocd.argoproj.io/sync-wave"


@dataclass
class Platform:
    cluster: Cluster
    api: kube_rest.Client
    argocd: ArgoCD
    repo: Repo
    commit: str
    application: dict[str, Any]  # as read once Synced and Healthy
    rendered: dict[Key, dict[str, Any]]  # a local `kfctl generate --stdout` of the same KfDef
    secrets: list[str]


@pytest.fixture(scope="module")
def platform(module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    argocd_support.require_argocd()
    root = tmp_path_factory.mktemp("argocd-plugin")
    kubeconfig = module_cluster.kubeconfig
    with app_repo(root, NAME, "--platform", "kind", generate=False) as app:
        repo, app_dir = app.repo, app.app_dir
        commit = repo.commit_and_push("kfctl platform: the KfDef alone", f"{APP_PATH}/kfdef.yaml")
        # The oracle's render, outside the repository's working copy (which holds the KfDef only).
        local = root / "local"
        local.mkdir()
        (local / "kfdef.yaml").write_text((app_dir / "kfdef.yaml").read_text())
        out = run_kfctl("generate", str(local), "--stdout").stdout
        rendered = {key_of(o): o for o in yamlio.safe_load_all(out) if o}
        export = root / "export"
        run_kfctl(
            "export", str(app_dir), "--format", "argocd-plugin", "--repo-url", repo.url, "--path", APP_PATH,
            "--plugin-image", "unused.invalid/kfctl:e2e", "--output-dir", str(export),
        )  # fmt: skip
        configmap = yaml.safe_load((export / "configmap-kfctl-cmp-plugin.yaml").read_text())
        plugin = root / "plugin-config"
        plugin.mkdir()
        (plugin / "plugin.yaml").write_text(configmap["data"]["plugin.yaml"])
        with synced_by_argocd(
            kubeconfig,
            root / "argocd",
            argocd_cm=export / "argocd-cm.yaml",
            application=(export / "application-e2e.yaml").read_text(),
            names=[NAME],
            secrets_of=local,
            revision=commit,
            timeout=INSTALL_TIMEOUT,
            plugin_config=plugin,
        ) as sync:
            application = sync.applications[NAME]
            yield Platform(module_cluster, sync.api, sync.argocd, repo, commit, application, rendered, sync.secrets)


def test_a_repo_holding_only_a_kfdef_deploys_the_platform_wave_after_wave(platform: Platform) -> None:
    managed = {
        (r.get("group") or "", r["kind"], r.get("namespace") or "", r["name"])
        for r in platform.application["status"]["resources"]
    }
    assert managed == set(platform.rendered), (
        f"only Argo CD: {sorted(managed - set(platform.rendered))[:10]}; "
        f"only kfctl: {sorted(set(platform.rendered) - managed)[:10]}"
    )
    assert platform.secrets, "kfctl secrets apply created no Secret: the platform would lack its credentials"
    live = live_objects(platform.cluster.kubeconfig, list(platform.rendered.values()))
    created: dict[int, list[float]] = {}
    for key, obj in platform.rendered.items():
        assert key in live, key
        wave = obj["metadata"]["annotations"][SYNC_WAVE]
        assert live[key]["metadata"]["annotations"][SYNC_WAVE] == wave, key
        created.setdefault(int(wave), []).append(timestamp(live[key]["metadata"]["creationTimestamp"]))
    waves = sorted(created)
    assert waves == list(range(len(waves))) and len(waves) >= 3, waves
    print("\nwaves (objects, first and last creation):")
    t0 = min(min(v) for v in created.values())
    for w in waves:
        print(f"  {w}: {len(created[w])} objects, +{min(created[w]) - t0:.0f} s .. +{max(created[w]) - t0:.0f} s")
    # A wave's objects are created only once the earlier waves' are healthy (second resolution: >=).
    for earlier, later in itertools.pairwise(waves):
        assert min(created[later]) >= max(created[earlier]), (earlier, later, created)


def live_objects(kubeconfig: str, objects: list[dict[str, Any]], *flags: str) -> dict[Key, dict[str, Any]]:
    """The live copies of ``objects`` that exist, read with one `kubectl get`."""
    out = flux_support.kubectl(
        kubeconfig, "get", "-f", "-", "--ignore-not-found", "-o", "json", *flags, stdin=yaml.safe_dump_all(objects)
    )
    doc: dict[str, Any] = json.loads(out) if out.strip() else {}
    items: list[dict[str, Any]] = doc["items"] if doc.get("kind") == "List" else [doc] if doc else []
    return {key_of(o): o for o in items}


def test_a_commit_setting_one_parameter_changes_exactly_the_objects_it_targets(platform: Platform) -> None:
    component = yaml.safe_load((REPO / "manifests" / "training-operator" / "component.yaml").read_text())
    (parameter,) = (p for p in component["parameters"] if p["name"] == "controllerThreads")
    targets = {(s["select"]["kind"], s["select"]["name"]) for s in parameter["targets"]}
    expected = {key for key in platform.rendered if (key[1], key[3]) in targets}
    assert expected == {("apps", "Deployment", "kubeflow", "training-operator")}, expected
    objects, kubeconfig = list(platform.rendered.values()), platform.cluster.kubeconfig
    old = live_objects(kubeconfig, objects, MANAGED_FIELDS)
    before = {key: argocd_writes(obj) for key, obj in old.items()}
    assert all(before.values()), [k for k, v in before.items() if not v][:5]  # every object written by Argo CD

    kfdef_path = platform.repo.work / APP_PATH / "kfdef.yaml"
    kfdef = yaml.safe_load(kfdef_path.read_text())
    (app,) = (a for a in kfdef["spec"]["applications"] if a["name"] == "training-operator")
    app["kustomizeConfig"]["parameters"] = [{"name": "controllerThreads", "value": "2"}]
    kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
    commit = platform.repo.commit_and_push("training-operator: two threads per controller", f"{APP_PATH}/kfdef.yaml")
    argocd_support.hard_refresh(platform.cluster.kubeconfig, NAME)  # as a git webhook would (none here)
    argocd_support.wait_all(platform.api, [NAME], timeout=600, argocd=platform.argocd, revision=commit)
    platform.commit = commit

    live = live_objects(kubeconfig, objects, MANAGED_FIELDS)
    changed = {key for key, obj in live.items() if argocd_writes(obj) != before.get(key)}
    assert changed == expected, {  # what Argo CD's managedFields entries of the others were, and are
        key: [
            [f for f in o["metadata"]["managedFields"] if f["manager"].startswith("argocd")]
            for o in (old[key], live[key])
        ]
        for key in changed - expected
    }
    (deployment,) = (live[key] for key in expected)
    (container,) = (c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "training-operator")
    assert "--controller-threads=2" in container["args"], container["args"]
    assert live.keys() == before.keys()


MANAGED_FIELDS = "--show-managed-fields"  # kubectl get leaves them out otherwise


def argocd_writes(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """When Argo CD's server-side applies last changed ``obj`` (its managers' entries in managedFields)."""
    fields = obj["metadata"].get("managedFields") or []
    return sorted((f["manager"], f.get("time", "")) for f in fields if f["manager"].startswith("argocd"))


def test_a_kfdef_error_fails_the_render_with_kfctls_message_and_changes_nothing(platform: Platform) -> None:
    kfdef_path = platform.repo.work / APP_PATH / "kfdef.yaml"
    kfdef = yaml.safe_load(kfdef_path.read_text())
    kfdef["spec"]["applications"].append({"name": "jupyter-web-ap"})
    kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
    before = {a["metadata"]["name"]: a["metadata"]["resourceVersion"] for a in platform.api.list(APPLICATIONS)}
    commit = platform.repo.commit_and_push("a typo", f"{APP_PATH}/kfdef.yaml")
    # Else the repo-server may take 3 min to see it: the last test's commit had it resolve main just now.
    argocd_support.hard_refresh(platform.cluster.kubeconfig, NAME)
    message: list[str] = []

    def comparison_error() -> bool:
        app = platform.api.get(f"{APPLICATIONS}/{NAME}") or {}
        conditions = (app.get("status") or {}).get("conditions") or []
        message[:] = [c.get("message", "") for c in conditions if c.get("type") == "ComparisonError"]
        return bool(message) and "jupyter-web-ap" in message[0]

    argocd_support.wait_for(
        comparison_error, api=platform.api, argocd=platform.argocd, timeout=300, what="a ComparisonError of the plugin"
    )
    print(f"\nArgo CD's condition for commit {commit[:8]}:\n  {message[0]}")
    assert "Error (config error)" in message[0] and "kfdef.yaml" in message[0], message[0]
    assert before.keys() == {a["metadata"]["name"] for a in platform.api.list(APPLICATIONS)}
    app = platform.api.get(f"{APPLICATIONS}/{NAME}") or {}
    assert app["status"]["history"][-1]["revision"] == platform.commit  # no sync since the last good commit
    assert (
        live_objects(platform.cluster.kubeconfig, list(platform.rendered.values())).keys() == platform.rendered.keys()
    )
