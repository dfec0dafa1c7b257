"""Ownership: who manages an object kfctl is about to write, what stops the run, what is adopted and kept."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, kfdef_text, obj, write_app
from shared_apps import run_apply, with_namespace

from kfctl.catalog.model import Catalog
from kfctl.config.loader import parse_kfdef
from kfctl.engine import inventory, labels, ownership
from kfctl.engine.events import EventLog
from kfctl.engine.inventory import Inventory, Member
from kfctl.engine.probe import external_health
from kfctl.engine.remove import RemoveOptions, remove
from kfctl.errors import ConfigError, OwnershipError
from kfctl.k8s.api import ApiError
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.plan.graph import ExternalCheck, build_plan, external_id

OURS = "applyset-ours-v1"


def meta(labels_: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **more: Any) -> Obj:
    return {"metadata": {"labels": labels_ or {}, "annotations": annotations or {}, **more}}


@pytest.mark.parametrize(
    ("live", "owner"),
    [
        pytest.param(
            meta(
                {"app.kubernetes.io/managed-by": "Helm"},
                {"meta.helm.sh/release-name": "cert-manager", "meta.helm.sh/release-namespace": "cert-manager"},
            ),
            ownership.Owner("Helm release cert-manager/cert-manager", True),
            id="helm-release",
        ),
        pytest.param(
            meta({"app.kubernetes.io/managed-by": "Helm"}),
            ownership.Owner("Helm release ?", True),
            id="helm-label-without-release-annotations",
        ),
        pytest.param(
            meta(annotations={"argocd.argoproj.io/tracking-id": "platform:apps/Deployment:kubeflow/op"}),
            ownership.Owner("Argo CD application platform", True, "Argo CD"),
            id="argocd-annotation-tracking",
        ),
        pytest.param(
            meta({"app.kubernetes.io/instance": "platform"}),
            ownership.Owner("Argo CD application or chart instance platform (label app.kubernetes.io/instance)", False),
            id="argocd-label-tracking-or-a-charts-label-is-not-a-mark",
        ),
        pytest.param(
            meta({"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
            ownership.Owner("Flux Kustomization flux-system/infra", True, "Flux"),
            id="flux-kustomization",
        ),
        pytest.param(
            meta({"kapp.k14s.io/app": "1700000000"}),
            ownership.Owner("kapp app (kapp.k14s.io/app=1700000000)", True),
            id="kapp",
        ),
        pytest.param(
            meta({labels.PART_OF: "applyset-other-v1", labels.APP_LABEL: "team-b"}),
            ownership.Owner("kfctl install team-b (ApplySet applyset-other-v1)", True),
            id="another-kfctl-install",
        ),
        pytest.param(
            meta({labels.PART_OF: "applyset-other-v1"}),
            ownership.Owner("ApplySet applyset-other-v1", True),
            id="another-applyset-tool",
        ),
        pytest.param(
            meta(ownerReferences=[{"kind": "ReplicaSet", "name": "web-1", "controller": True}]),
            ownership.Owner("controlled by ReplicaSet web-1", True),
            id="a-controllers-object",
        ),
        pytest.param(
            meta(managedFields=[{"manager": "kubectl-client-side-apply"}, {"manager": "kubectl-edit"}]),
            ownership.Owner("field managers: kubectl-client-side-apply, kubectl-edit", False),
            id="someones-kubectl",
        ),
        pytest.param(meta(), ownership.Owner("no owner recorded", False), id="nothing-recorded"),
    ],
)
def test_the_owner_of_a_foreign_object_is_named_from_the_marks_its_tool_leaves(live: Obj, owner: object) -> None:
    assert ownership.owner_of(live) == owner


HELM = {"app.kubernetes.io/managed-by": "Helm"}
HELM_NOTES = {"meta.helm.sh/release-name": "cert-manager", "meta.helm.sh/release-namespace": "cert-manager"}


def test_the_scan_sorts_existing_objects_into_ours_absent_shared_and_foreign() -> None:
    cluster = FakeCluster()
    ours = cluster.put(
        labels.prepare(obj("v1", "ConfigMap", "ours", "demo"), applyset_id=OURS, kfdef_name="d", application="app")
    )
    unlabelled = cluster.put(obj("v1", "ConfigMap", "label-stripped", "demo"))
    cluster.put(obj("v1", "ConfigMap", "helms", "demo", labels=HELM, annotations=HELM_NOTES))
    cluster.put(obj("v1", "Namespace", "demo"))
    inv = Inventory("kfctl-d", "demo", "c")
    inv.members[key_of(unlabelled)] = Member(key_of(unlabelled), "app", unlabelled["metadata"]["uid"])
    names = ("ours", "label-stripped", "helms", "new")
    bundle = [("app", obj("v1", "Namespace", "demo")), *(("app", obj("v1", "ConfigMap", n, "demo")) for n in names)]
    found = ownership.scan(cluster, bundle, applyset_id=OURS, inventory=inv)
    cm = lambda n: ObjectKey("", "ConfigMap", "demo", n)  # noqa: E731
    assert found.live[cm("ours")] is not None and found.live[cm("ours")]["metadata"]["uid"] == ours["metadata"]["uid"]
    assert found.live[cm("label-stripped")] is not None  # ours by the UID the inventory recorded
    assert found.live[cm("new")] is None
    assert [(f.key, f.owner.description) for f in found.foreign] == [
        (cm("helms"), "Helm release cert-manager/cert-manager")
    ]
    assert [f.key for f in found.shared] == [ObjectKey("", "Namespace", "", "demo")]


def kfdef(body: str, catalog: Catalog) -> Any:
    head = "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata:\n  name: demo\nspec:\n"
    return parse_kfdef(head + textwrap.indent(textwrap.dedent(body), "  "), path=Path("kfdef.yaml"), catalog=catalog)


def app_with(tmp_path: Path, *applications: str, rendered: dict[str, str] | None = None) -> Path:
    """APPDIR for `kfctl apply --skip-generate`: a KfDef `demo` listing these application entries (YAML flow
    mappings) and rendered files (by default cert-manager's: the ConfigMaps a and b in kubeflow)."""
    path = write_app(tmp_path / "app", rendered=rendered or {"cert-manager": CONFIGMAPS})
    path.write_text(kfdef_text() + "".join(f"  - {a}\n" for a in applications))
    return path


CONFIGMAPS = "".join(
    f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: kubeflow}}\n" for n in "ab"
)


def foreign(cluster: FakeCluster, marks: list[tuple[dict[str, str], dict[str, str]]]) -> FakeCluster:
    """The ConfigMaps a, b, … in kubeflow, made by another tool (its labels and annotations)."""
    for name, (tags, notes) in zip("ab", marks, strict=True):
        cluster.put(obj("v1", "ConfigMap", name, "kubeflow", labels=tags, annotations=notes))
    return cluster


def test_foreign_objects_stop_the_run_listing_each_with_its_owner_and_the_ways_out(tmp_path: Path) -> None:
    cluster = foreign(with_namespace(), [(HELM, HELM_NOTES)] * 2)
    with pytest.raises(OwnershipError) as info:
        run_apply(cluster, app_with(tmp_path, "{name: cert-manager}"))
    error = info.value
    assert error.exit_code == 11
    assert error.message == (
        "2 object(s) the KfDef would install exist already under another owner "
        "(Helm release cert-manager/cert-manager); nothing was written"
    )
    assert error.details == [
        "ConfigMap kubeflow/a (cert-manager): Helm release cert-manager/cert-manager",
        "ConfigMap kubeflow/b (cert-manager): Helm release cert-manager/cert-manager",
    ]
    assert "external: true" in (error.hint or "") and "--adopt" in (error.hint or "")
    assert inventory_of(cluster) is None  # nothing written: not even the inventory


def test_an_application_marked_adopt_takes_its_foreign_objects_over_and_records_their_owner(tmp_path: Path) -> None:
    cluster = foreign(with_namespace(), [(HELM, HELM_NOTES)] * 2)
    summary = run_apply(cluster, app_with(tmp_path, "{name: cert-manager, adopt: true}"))
    assert summary.error is None
    assert summary.adopted == 2
    recorded = inventory_of(cluster)
    assert recorded is not None
    assert {str(k): m.adopted for k, m in recorded.members.items()} == {
        "ConfigMap kubeflow/a": "Helm release cert-manager/cert-manager",
        "ConfigMap kubeflow/b": "Helm release cert-manager/cert-manager",
    }


def inventory_of(cluster: FakeCluster) -> Inventory | None:
    return inventory.read(cluster, name=inventory.parent_name("demo"), namespace="kubeflow")


FLUX = {"kustomize.toolkit.fluxcd.io/name": "prod-kserve", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
ARGO = {"argocd.argoproj.io/tracking-id": "prod-kserve:/ConfigMap:demo/b"}


@pytest.mark.parametrize(
    ("marks", "owners", "hint"),
    [
        pytest.param(
            [(FLUX, {}), (FLUX, {})],
            "Flux Kustomization flux-system/prod-kserve",
            "a GitOps engine (Flux) reconciles these objects from git: change them there (kfctl generate, kfctl "
            "export, commit) rather than with kfctl apply, as --adopt would have both keep writing them. To hand an "
            "application over to kfctl, first remove it from the engine without deleting its objects (Flux: set "
            "prune: false on its Kustomization, then delete it), then kfctl apply --adopt",
            id="flux",
        ),
        pytest.param(
            [(FLUX, {}), ({}, ARGO)],
            "Argo CD application prod-kserve; Flux Kustomization flux-system/prod-kserve",
            "a GitOps engine (Argo CD and Flux) reconciles these objects from git: change them there (kfctl "
            "generate, kfctl export, commit) rather than with kfctl apply, as --adopt would have both keep writing "
            "them. To hand an application over to kfctl, first remove it from the engine without deleting its "
            "objects (Argo CD: delete its Application without cascading; Flux: set prune: false on its "
            "Kustomization, then delete it), then kfctl apply --adopt",
            id="argo-cd-and-flux",
        ),
        pytest.param(
            [(FLUX, {}), (HELM, HELM_NOTES)],
            "Flux Kustomization flux-system/prod-kserve; Helm release cert-manager/cert-manager",
            "a GitOps engine (Flux) reconciles these objects from git: change them there (kfctl generate, kfctl "
            "export, commit) rather than with kfctl apply, as --adopt would have both keep writing them. To hand an "
            "application over to kfctl, first remove it from the engine without deleting its objects (Flux: set "
            "prune: false on its Kustomization, then delete it), then kfctl apply --adopt",
            id="an-engine-among-others-names-the-engine",
        ),
    ],
)
def test_objects_a_gitops_engine_reconciles_are_refused_pointing_to_git_not_to_adopt(
    marks: list[tuple[dict[str, str], dict[str, str]]], owners: str, hint: str, tmp_path: Path
) -> None:
    cluster = foreign(with_namespace(), marks)
    with pytest.raises(OwnershipError) as info:
        run_apply(cluster, app_with(tmp_path, "{name: cert-manager}"))
    error = info.value
    assert error.exit_code == 11
    assert error.message == (
        f"2 object(s) the KfDef would install exist already under another owner ({owners}); nothing was written"
    )
    assert error.hint == hint


FAST = RemoveOptions(wait_timeout=1.0, poll_interval=0.01)


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        pytest.param(FAST, True, id="kept-by-default"),
        pytest.param(RemoveOptions(wait_timeout=1.0, poll_interval=0.01, adopted=True), False, id="deleted-when-asked"),
    ],
)
def test_an_adopted_object_is_kept_by_delete_and_prune_unless_asked(options: RemoveOptions, kept: bool) -> None:
    cluster = FakeCluster()
    stored = cluster.put(
        labels.prepare(obj("v1", "ConfigMap", "c", "demo"), applyset_id=OURS, kfdef_name="d", application="app")
    )
    member = Member(key_of(stored), "cert-manager", stored["metadata"]["uid"], "Helm release cert-manager/cm")
    log = EventLog()
    result = remove(cluster, [member], applyset_id=OURS, reporter=log, options=options, verb="Deleted")
    assert (cluster.live(member.key) is not None) is kept
    if kept:
        assert result.kept == [
            (
                member.key,
                "adopted from Helm release cert-manager/cm (kfctl did not create it); kept without --prune-adopted",
            )
        ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "applications: [{name: cert-manager, external: true, adopt: true}]",
            "kfdef.yaml:6:55 spec.applications[0].adopt: an external application is not applied, so there is "
            "nothing to adopt; keep one of external, adopt",
            id="external-and-adopt",
        ),
        pytest.param(
            "applications: [{name: cert-manager, external: yes-please}]",
            "kfdef.yaml:6:39 spec.applications[0].external: must be true or false, got a string",
            id="not-a-boolean",
        ),
        pytest.param(
            """\
            applications:
              - name: katib
                external: true
                kustomizeConfig:
                  parameters: [{name: dbPvcSize, value: 20Gi}]
            """,
            "kfdef.yaml:10:9 spec.applications[0].kustomizeConfig.parameters: not used: the application is "
            "external (the cluster provides it; kfctl renders nothing for it); remove kustomizeConfig.parameters "
            "or external: true",
            id="parameters-of-an-external-application",
        ),
    ],
)
def test_the_loader_checks_external_and_adopt(body: str, expected: str, catalog: Catalog) -> None:
    with pytest.raises(ConfigError) as info:
        kfdef(body, catalog)
    assert info.value.details == [expected]


def test_an_external_application_is_checked_not_rendered(catalog: Catalog) -> None:
    k = kfdef("applications: [{name: cert-manager, external: true}, {name: common}]", catalog)
    assert [a.name for a in k.installed_applications()] == ["common"]
    assert [a.name for a in k.enabled_applications()] == ["cert-manager", "common"]


def crd(name: str, group: str) -> Obj:
    return obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        name,
        spec={"group": group, "scope": "Namespaced", "names": {"kind": "Certificate", "plural": name.split(".")[0]}},
        status={"conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]},
    )


def test_objects_of_an_external_applications_kinds_wait_for_its_check() -> None:
    check = ExternalCheck("cert-manager", ("certificates.cert-manager.io",))
    cert = obj("cert-manager.io/v1", "Certificate", "serving", "kubeflow")
    plan = build_plan([("kserve", [cert])], depends_on={"kserve": ["cert-manager"]}, externals=[check])
    deps = {e.dependency for e in plan.deps["Certificate.cert-manager.io kubeflow/serving"]}
    assert external_id("cert-manager") in deps


@pytest.mark.parametrize(
    ("present", "state", "message"),
    [
        pytest.param(
            [],
            "failed",
            "the cluster does not serve certificates.cert-manager.io; the KfDef says it provides application "
            "cert-manager (external: true): install it, or drop external: true to let kfctl install it",
            id="not-installed",
        ),
        pytest.param(
            [crd("certificates.cert-manager.io", "cert-manager.io")],
            "ready",
            "1 CRDs served, 0 webhook(s) guarding them answer",
            id="installed-no-webhook",
        ),
    ],
)
def test_an_external_application_is_ready_when_the_cluster_serves_its_crds(
    present: list[Obj], state: str, message: str
) -> None:
    cluster = FakeCluster()
    for o in present:
        cluster.put(o)
    h = external_health(cluster, ExternalCheck("cert-manager", ("certificates.cert-manager.io",)))
    assert (h.state, h.message) == (state, message)


def test_the_scan_finds_objects_where_the_server_keeps_them_not_where_they_were_rendered() -> None:
    """A namespaced object rendered without a namespace lives in "default"; a cluster-scoped one rendered with
    one has none: the scan must find both, or it would overwrite someone's object as if it were absent."""
    cluster = FakeCluster()
    cluster.put(obj("v1", "ConfigMap", "settings", "default", labels=HELM, annotations=HELM_NOTES))
    cluster.put(obj("v1", "Namespace", "team", labels=HELM, annotations=HELM_NOTES))
    bundle = [("app", obj("v1", "ConfigMap", "settings")), ("app", obj("v1", "Namespace", "team", "kubeflow"))]
    found = ownership.scan(cluster, bundle, applyset_id=OURS, inventory=None)
    assert sorted(str(f.key) for f in found.foreign) == ["ConfigMap settings", "Namespace kubeflow/team"]


def test_an_object_another_tool_marked_since_is_not_ours_by_its_recorded_uid() -> None:
    cluster = FakeCluster()
    theirs = cluster.put(
        obj("v1", "ConfigMap", "c", "demo", labels={labels.PART_OF: "applyset-b-v1", labels.APP_LABEL: "b"})
    )
    inv = Inventory("kfctl-d", "demo", "c")
    inv.members[key_of(theirs)] = Member(key_of(theirs), "app", theirs["metadata"]["uid"])
    found = ownership.scan(cluster, [("app", obj("v1", "ConfigMap", "c", "demo"))], applyset_id=OURS, inventory=inv)
    assert [f.owner.description for f in found.foreign] == ["kfctl install b (ApplySet applyset-b-v1)"]


def test_adopting_a_key_the_inventory_recorded_marks_it_adopted_and_forgets_the_stale_uid() -> None:
    key = ObjectKey("", "ConfigMap", "demo", "c")
    inv = Inventory("kfctl-d", "demo", "c", {key: Member(key, "app", "uid-of-ours-long-gone")})
    merged = inv.merged([(key, "app")], adopted={key: "Helm release demo/r"})
    assert merged.members[key] == Member(key, "app", "", "Helm release demo/r")


def test_a_namespace_or_crd_holding_kept_adopted_objects_is_kept_with_them() -> None:
    cluster = FakeCluster()
    mine = {"applyset_id": OURS, "kfdef_name": "d", "application": "app"}
    ns = cluster.put(labels.prepare(obj("v1", "Namespace", "demo"), **mine))
    crd = cluster.put(labels.prepare(crd_of("widgets.example.com", "example.com", "Widget"), **mine))
    cm = cluster.put(labels.prepare(obj("v1", "ConfigMap", "c", "demo"), **mine))
    widget = cluster.put(labels.prepare(obj("example.com/v1", "Widget", "w", "demo"), **mine))
    members = [
        Member(key_of(ns), "app", ns["metadata"]["uid"]),
        Member(key_of(crd), "app", crd["metadata"]["uid"]),
        Member(key_of(cm), "app", cm["metadata"]["uid"], "Helm release demo/r"),
        Member(key_of(widget), "app", widget["metadata"]["uid"], "Helm release demo/r"),
    ]
    options = RemoveOptions(namespaces=True, crds=True, wait_timeout=1.0, poll_interval=0.01)
    result = remove(cluster, members, applyset_id=OURS, reporter=EventLog(), options=options, verb="Deleted")
    kept = dict(result.kept)
    assert kept[key_of(ns)] == (
        "holds 2 adopted object(s) that are kept (ConfigMap demo/c, Widget.example.com demo/w); "
        "kept without --prune-adopted"
    )
    assert kept[key_of(crd)] == (
        "is the kind of 1 adopted object(s) that are kept (Widget.example.com demo/w); kept without --prune-adopted"
    )
    assert result.removed == []


def crd_of(name: str, group: str, kind: str) -> Obj:
    return obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        name,
        spec={"group": group, "scope": "Namespaced", "names": {"kind": kind, "plural": name.split(".")[0]}},
    )


def test_an_application_this_install_applied_is_not_pruned_when_marked_external(tmp_path: Path) -> None:
    cluster = with_namespace()
    rendered = {
        "cert-manager": CONFIGMAPS,
        "common": CONFIGMAPS.replace("name: a", "name: c").replace("name: b", "name: d"),
    }
    assert (
        run_apply(cluster, app_with(tmp_path, "{name: cert-manager}", "{name: common}", rendered=rendered)).error
        is None
    )
    before = inventory_of(cluster)
    marked = app_with(tmp_path, "{name: cert-manager, external: true}", "{name: common}", rendered=rendered)
    with pytest.raises(OwnershipError) as info:
        run_apply(cluster, marked)
    assert info.value.message == (
        "cert-manager: marked external: true, but this install applied it (cert-manager: 2 objects in its "
        "inventory); kfctl would prune what the KfDef says the cluster provides; nothing was written"
    )
    after = inventory_of(cluster)
    assert before is not None and after is not None and after.members == before.members
    assert [cluster.get("v1", "ConfigMap", namespace="kubeflow", name=n) is not None for n in "abcd"] == [True] * 4


@pytest.mark.parametrize(
    ("namespaces", "may_list_everywhere", "lists"),
    [
        pytest.param(["a"], True, ["a"], id="one namespace: listed there"),
        pytest.param(["a", "b", "c"], True, [None], id="several: one list across all namespaces"),
        pytest.param(["a", "b"], False, [None, "a", "b"], id="not allowed everywhere: one list per namespace"),
    ],
)
def test_the_scan_lists_what_it_does_not_own_with_as_few_requests_as_it_may(
    namespaces: list[str], may_list_everywhere: bool, lists: list[str | None]
) -> None:
    cluster = FakeCluster()
    cluster.put(obj("v1", "ConfigMap", "c", namespaces[-1], labels=HELM, annotations=HELM_NOTES))
    calls: list[str | None] = []
    real = cluster.list_metadata

    def list_metadata(api_version: str, kind: str, *, namespace: str | None = None) -> list[Obj]:
        calls.append(namespace)
        if namespace is None and not may_list_everywhere:
            raise ApiError(403, 'configmaps is forbidden: User "u" cannot list resource "configmaps"')
        return real(api_version, kind, namespace=namespace)

    cluster.list_metadata = list_metadata  # type: ignore[method-assign]
    bundle = [("app", obj("v1", "ConfigMap", "c", ns)) for ns in namespaces]
    found = ownership.scan(cluster, bundle, applyset_id=OURS, inventory=None)
    assert calls == lists
    assert [str(f.key) for f in found.foreign] == [f"ConfigMap {namespaces[-1]}/c"]


def test_what_an_earlier_delete_released_is_plain_to_another_install_and_this_ones_to_take_back() -> None:
    cluster = FakeCluster()
    kept = labels.prepare(obj("v1", "Namespace", "demo"), applyset_id=OURS, kfdef_name="d", application="app")
    claim = labels.prepare(
        obj("v1", "PersistentVolumeClaim", "data", "demo"), applyset_id=OURS, kfdef_name="d", application="app"
    )
    cluster.put(labels.released(kept, OURS))
    cluster.put(labels.released(claim, OURS))
    bundle = [("app", obj("v1", "Namespace", "demo")), ("app", obj("v1", "PersistentVolumeClaim", "data", "demo"))]
    ns, pvc = ObjectKey("", "Namespace", "", "demo"), ObjectKey("", "PersistentVolumeClaim", "demo", "data")
    # A new KfDef: the namespace is shared as any unmarked one; nothing names the old install as an owner.
    other = ownership.scan(cluster, bundle, applyset_id="applyset-other-v1", inventory=None)
    assert [f.key for f in other.shared] == [ns]
    # The claim holds another install's data: taking it needs --adopt, but it is no longer named as kfctl's.
    assert [(f.key, f.owner) for f in other.foreign] == [(pvc, ownership.Owner("no owner recorded", False))]
    # The same KfDef, its inventory gone with it: both are taken back without --adopt.
    same = ownership.scan(cluster, bundle, applyset_id=OURS, inventory=None)
    assert (same.foreign, same.shared) == ([], [])
    assert same.live[ns] is not None and same.live[pvc] is not None


def _ours(name: str) -> Obj:
    return labels.prepare(obj("v1", "ConfigMap", name, "demo"), applyset_id=OURS, kfdef_name="d", application="app")


@pytest.mark.parametrize(
    ("existing", "recorded", "requests", "live"),
    [
        pytest.param(
            [], False, ["metadata"], {"a": None, "b": None}, id="first install: one metadata list, no labelled one"
        ),
        pytest.param(
            [obj("v1", "ConfigMap", "a", "demo", labels=HELM, annotations=HELM_NOTES)],
            False,
            ["metadata"],
            {"b": None},
            id="first install beside a foreign object: still one list",
        ),
        pytest.param(
            [_ours("a")], True, ["labelled", "metadata"], {"a": "ours", "b": None}, id="recorded kind: labelled first"
        ),
        pytest.param(
            [_ours("a"), _ours("b")], True, ["labelled"], {"a": "ours", "b": "ours"}, id="re-apply: one labelled list"
        ),
        pytest.param(
            [_ours("a")],
            False,
            ["metadata", "labelled"],
            {"a": "ours", "b": None},
            id="inventory deleted by hand, our label found: the labelled list follows, metadata not read again",
        ),
    ],
)
def test_a_kind_the_inventory_records_nothing_of_is_scanned_with_one_list(
    existing: list[Obj], recorded: bool, requests: list[str], live: dict[str, str | None]
) -> None:
    """apply records an object in the inventory before its first write, so a kind without a recorded member holds
    nothing of this install: its metadata list alone sorts the bundle (a first install reads each kind once)."""
    cluster = FakeCluster()
    for o in existing:
        cluster.put(o)
    calls: list[str] = []
    real_list = cluster.list

    def listed(api_version: str, kind: str, **kw: Any) -> list[Obj]:
        calls.append("labelled" if kw.get("label_selector") else "list")
        return real_list(api_version, kind, **kw)

    def metadata(api_version: str, kind: str, *, namespace: str | None = None) -> list[Obj]:
        calls.append("metadata")
        return [{**o, "metadata": o["metadata"]} for o in real_list(api_version, kind, namespace=namespace)]

    cluster.list = listed  # type: ignore[method-assign]
    cluster.list_metadata = metadata  # type: ignore[method-assign]
    inv = None
    if recorded:
        inv = Inventory("kfctl-d", "demo", "c")
        key = ObjectKey("", "ConfigMap", "demo", "a")
        inv.members[key] = Member(key, "app", "")
    bundle = [("app", obj("v1", "ConfigMap", n, "demo")) for n in ("a", "b")]
    found = ownership.scan(cluster, bundle, applyset_id=OURS, inventory=inv)
    assert calls == requests
    got = {k.name: (None if v is None else "ours" if labels.owned_by(v, OURS) else "?") for k, v in found.live.items()}
    assert got == live
