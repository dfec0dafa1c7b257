"""What several applications share: prerequisites hoisted past dependsOn, and one object in two applications.

Upstream kubeflow/manifests v1.11.0 ships the ``kubeflow`` Namespace in katib's tree while the training
operator, which katib depends on, runs in it: gating the Namespace on katib's dependsOn was a cycle users
could not fix. A real cycle between two workloads is still an error. Identical copies of an object are
applied once; copies that differ are refused, naming both files and the fields.

Set KFCTL_UPDATE_SNAPSHOTS=1 to rewrite tests/snapshots/*.txt after an intended change, and review the diff.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from test_plan_graph import check_snapshot

from kfctl.app.plan import plan_as_dict, plan_kfdef
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import PlanError, RenderError
from kfctl.objects import ObjectKey
from kfctl.plan.duplicates import Copy, merge_copies
from kfctl.plan.graph import PlannedObject, build_plan
from kfctl.plan.summary import summarize
from kfctl.plan.text import format_plan, format_summary

TREE = Path(__file__).parent / "fixtures" / "shared-prerequisites"


def ns(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def deployment(name: str, namespace: str, *, pod: dict[str, Any] | None = None, after: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if after:
        meta["annotations"] = {"kfctl.kubeflow.org/depends-on": after}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], **(pod or {})}}},
    }


SA = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "ml"}}
PC = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 9}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "jobs.example.com"},
    "spec": {"group": "example.com", "names": {"kind": "Job", "plural": "jobs"}},
}
JOB = {"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "seed", "namespace": "ml"}}

# (id, operator's objects, tuner's objects — tuner dependsOn operator, what is hoisted and why)
HOIST_CASES = [
    (
        "namespace-in-the-later-application",
        [deployment("op", "ml")],
        [ns("ml"), deployment("tuner", "ml")],
        {
            "Namespace ml": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op [operator] needs it"
            " (its Namespace is Active)",
        },
    ),
    (
        "service-account-brings-its-namespace",
        [deployment("op", "ml", pod={"serviceAccountName": "op"})],
        [ns("ml"), SA],
        {
            "Namespace ml": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op [operator] needs it"
            " (its Namespace is Active)",
            "ServiceAccount ml/op": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op [operator] needs it"
            " (its pods reference it (ConfigMap/Secret/ServiceAccount))",
        },
    ),
    (
        "only-through-the-service-account",
        [ns("ml"), deployment("op", "ml", pod={"serviceAccountName": "op"})],
        [ns("other"), SA, deployment("tuner", "other")],
        {
            "ServiceAccount ml/op": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op [operator] needs it"
            " (its pods reference it (ConfigMap/Secret/ServiceAccount))",
        },
    ),
    (
        "priority-class-and-crd",
        [ns("ml"), deployment("op", "ml", pod={"priorityClassName": "hi"}), JOB],
        [PC, CRD],
        {
            "CustomResourceDefinition.apiextensions.k8s.io jobs.example.com": "hoisted ahead of tuner's dependsOn:"
            " Job.example.com ml/seed [operator] needs it"
            " (its CRD is Established (then the REST mapping is refreshed))",
            "PriorityClass.scheduling.k8s.io hi": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op"
            " [operator] needs it (its pods' PriorityClass exists)",
        },
    ),
    (
        "counts-the-other-needers",
        [deployment("op", "ml"), deployment("op2", "ml")],
        [ns("ml")],
        {
            "Namespace ml": "hoisted ahead of tuner's dependsOn: Deployment.apps ml/op [operator] needs it"
            " (its Namespace is Active), as do 1 more object(s) of other applications",
        },
    ),
    ("needed-only-inside-its-application", [ns("a")], [ns("ml"), deployment("tuner", "ml")], {}),
]


@pytest.mark.parametrize(("case", "operator", "tuner", "hoisted"), HOIST_CASES, ids=[c[0] for c in HOIST_CASES])
def test_shared_prerequisites_are_hoisted_past_depends_on(
    case: str, operator: list[dict[str, Any]], tuner: list[dict[str, Any]], hoisted: dict[str, str]
) -> None:
    plan = build_plan([("operator", operator), ("tuner", tuner)], depends_on={"tuner": ["operator"]})
    shown = {s["step"]: s["hoisted"]["reason"] for wave in plan_as_dict(plan)["waves"] for s in wave if "hoisted" in s}
    assert shown == hoisted
    for sid in hoisted:  # nothing hoisted waits for the application it would have waited for
        assert "application operator" not in [e.dependency for e in plan.deps[sid]]
    for sid in plan.deps:
        if plan.steps[sid].app == "tuner" and isinstance(plan.steps[sid], PlannedObject) and sid not in hoisted:
            assert "application operator" in [e.dependency for e in plan.deps[sid]], sid


def test_without_depends_on_nothing_is_hoisted() -> None:
    plan = build_plan([("operator", [deployment("op", "ml")]), ("tuner", [ns("ml")])], depends_on={})
    assert plan.hoisted == {}
    assert plan.waves() == [["Namespace ml"], ["Deployment.apps ml/op"]]


# The one cycle both rows below must print, exactly as kfctl printed cycles before hoisting existed.
WORKLOAD_CYCLE = (
    "dependency cycle: Deployment.apps ml/op → Deployment.apps ml/tuner → application operator → Deployment.apps ml/op",
    [
        "Deployment.apps ml/op waits for Deployment.apps ml/tuner: annotation kfctl.kubeflow.org/depends-on",
        "Deployment.apps ml/tuner waits for application operator: its application depends on that one"
        " (catalog/KfDef dependsOn)",
        "application operator waits for Deployment.apps ml/op: part of the application (it serves no API, so"
        " its dependents wait for all of it)",
    ],
)
# (id, operator's objects, tuner's objects, error message, details) — tuner dependsOn operator
CYCLE_CASES = [
    (
        "two-workloads-wait-on-each-other",
        [ns("ml"), deployment("op", "ml", after="Deployment.apps/ml/tuner")],
        [deployment("tuner", "ml")],
        *WORKLOAD_CYCLE,
    ),
    (
        "a-hoisted-namespace-does-not-hide-a-workload-cycle",
        [deployment("op", "ml", after="Deployment.apps/ml/tuner")],
        [ns("ml"), deployment("tuner", "ml")],
        *WORKLOAD_CYCLE,
    ),
]


@pytest.mark.parametrize(
    ("case", "operator", "tuner", "message", "details"), CYCLE_CASES, ids=[c[0] for c in CYCLE_CASES]
)
def test_a_real_cycle_is_still_an_error(
    case: str, operator: list[dict[str, Any]], tuner: list[dict[str, Any]], message: str, details: list[str]
) -> None:
    with pytest.raises(PlanError) as err:
        build_plan([("operator", operator), ("tuner", tuner)], depends_on={"tuner": ["operator"]})
    assert err.value.message == message
    assert err.value.details == details
    assert err.value.exit_code == 5


SOURCES = {"a": "demo/rendered/a.yaml", "b": "demo/rendered/b.yaml"}
NS_ML = ObjectKey("", "Namespace", "", "ml")
# (id, a's object, b's copy, the Copy when accepted once, else the exact error message)
COPY_CASES: list[tuple[str, dict[str, Any], dict[str, Any], Copy | str]] = [
    ("identical", ns("ml", team="ml"), ns("ml", team="ml"), Copy(NS_ML, "a", "b")),
    (
        "identical-after-normalisation",
        ns("ml", team="ml"),
        {
            **ns("ml"),
            "status": {"phase": "Active"},
            "spec": {"finalizers": []},
            "metadata": {"labels": {"team": "ml"}, "name": "ml", "annotations": {}, "creationTimestamp": None},
        },
        Copy(NS_ML, "a", "b"),
    ),
    (
        "labels-one-copy-lacks-are-merged",
        ns("ml", team="ml"),
        {
            **ns("ml", team="ml", extra="yes"),
            "metadata": {"name": "ml", "labels": {"team": "ml", "extra": "yes"}, "annotations": {"note": "b"}},
        },
        Copy(NS_ML, "a", "b", ("metadata.annotations.note", "metadata.labels.extra")),
    ),
    (
        "a-label-differs",
        ns("ml", team="ml"),
        ns("ml", team="research", extra="yes"),
        "Namespace ml: application a (demo/rendered/a.yaml) and application b (demo/rendered/b.yaml) render it"
        " differently: metadata.labels.extra, metadata.labels.team",
    ),
    (
        "a-container-image-differs",
        deployment("op", "ml"),
        {**deployment("op", "ml"), "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "y"}]}}}},
        "Deployment.apps ml/op: application a (demo/rendered/a.yaml) and application b (demo/rendered/b.yaml)"
        " render it differently: spec.template.spec.containers[0].image",
    ),
]


@pytest.mark.parametrize(("case", "first", "copy", "verdict"), COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_the_same_object_in_two_applications(
    case: str, first: dict[str, Any], copy: dict[str, Any], verdict: Copy | str
) -> None:
    bundle = [("a", (first,)), ("b", (copy, ns("b")))]
    if isinstance(verdict, Copy):
        merged, copies = merge_copies(bundle, sources=SOURCES)
        assert merged == (("a", (first,)), ("b", (ns("b"),)))
        assert copies == (verdict,)
        for field in verdict.merged:  # the kept copy now carries what the dropped one added
            _, section, key = field.split(".", 2)
            assert first["metadata"][section][key] == copy["metadata"][section][key]
        return
    with pytest.raises(RenderError) as err:
        merge_copies(bundle, sources=SOURCES)
    assert err.value.message == verdict
    assert err.value.exit_code == 4
    assert err.value.hint and "keep one copy" in err.value.hint


def test_several_differing_objects_are_listed_together() -> None:
    with pytest.raises(RenderError) as err:
        merge_copies(
            [("a", (ns("x", t="1"), ns("y", u="1"))), ("b", (ns("x", t="2"), ns("y", t="3", u="2")))], sources=SOURCES
        )
    assert err.value.message == "2 objects are rendered differently by two applications"
    assert err.value.details == [
        "Namespace x: application a (demo/rendered/a.yaml) and application b (demo/rendered/b.yaml) render it"
        " differently: metadata.labels.t",
        "Namespace y: application a (demo/rendered/a.yaml) and application b (demo/rendered/b.yaml) render it"
        " differently: metadata.labels.t, metadata.labels.u",
    ]


# --- end to end through generate and plan, on our small tree and on upstream v1.11.0 -----------------------

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: shared
spec:
  platform: generic
  repos:
    - name: upstream
      uri: {repo}
  applications:
{apps}
"""


def write_kfdef(app_dir: Path, repo: Path, apps: list[tuple[str, str, list[str]]]) -> Path:
    lines = []
    for name, path, deps in apps:
        lines.append(f"    - name: {name}")
        if deps:
            lines.append(f"      dependsOn: [{', '.join(deps)}]")
        lines.append(f"      kustomizeConfig: {{repoRef: {{name: upstream, path: {path}}}}}")
    app_dir.mkdir(parents=True, exist_ok=True)
    path = app_dir / "kfdef.yaml"
    path.write_text(KFDEF.format(repo=repo, apps="\n".join(lines)), encoding="utf-8")
    return path


TREE_APPS = [("operator", "operator", []), ("tuner", "tuner", ["operator"])]


def test_tree_with_the_namespace_in_the_later_application_plans(tmp_path: Path, real_catalog: Catalog) -> None:
    kfdef = load_kfdef(write_kfdef(tmp_path / "demo", TREE, TREE_APPS), real_catalog)
    plan = plan_kfdef(kfdef, real_catalog)
    text = format_plan(plan)
    check_snapshot("plan_shared_prerequisites", text)
    assert sorted(plan.hoisted) == ["Namespace ml", "PriorityClass.scheduling.k8s.io ml-critical"]
    assert "      hoisted ahead of tuner's dependsOn: Deployment.apps ml/operator [operator] needs it" in text


def test_tree_with_an_identical_copy_applies_it_once(tmp_path: Path, real_catalog: Catalog) -> None:
    apps = [*TREE_APPS, ("same-namespace", "same-namespace", [])]
    kfdef = load_kfdef(write_kfdef(tmp_path / "demo", TREE, apps), real_catalog)
    plan = plan_kfdef(kfdef, real_catalog)
    assert [s.app for s in plan.objects() if s.id == "Namespace ml"] == ["tuner"]
    assert plan.copies == {"Namespace ml": ("same-namespace",)}
    assert "      applied once: identical copy in application same-namespace" in format_plan(plan)
    steps = {s["step"]: s for wave in plan_as_dict(plan)["waves"] for s in wave}
    assert steps["Namespace ml"]["copiesIn"] == ["same-namespace"]


def test_tree_with_a_differing_copy_names_both_files_and_fields(tmp_path: Path, real_catalog: Catalog) -> None:
    apps = [*TREE_APPS, ("other-namespace", "other-namespace", [])]
    kfdef = load_kfdef(write_kfdef(tmp_path / "demo", TREE, apps), real_catalog)
    with pytest.raises(RenderError) as err:
        plan_kfdef(kfdef, real_catalog)
    rendered = tmp_path / "demo" / "rendered"
    assert err.value.message == (
        f"Namespace ml: application tuner ({rendered / 'tuner.yaml'}) and application other-namespace"
        f" ({rendered / 'other-namespace.yaml'}) render it differently:"
        " metadata.labels.istio-injection, metadata.labels.team"
    )


UPSTREAM_APPS = [
    ("cert-manager", "common/cert-manager/base", []),
    ("training-operator", "applications/training-operator/upstream/overlays/kubeflow", []),
    ("katib", "applications/katib/upstream/installs/katib-standalone", ["cert-manager", "training-operator"]),
    ("notebook-controller", "applications/jupyter/notebook-controller/upstream/overlays/standalone", []),
    ("kserve", "applications/kserve/kserve", []),
]


def test_upstream_v1_11_five_applications_plan_without_a_cycle(
    tmp_path: Path, real_catalog: Catalog, upstream_v1_11: Path
) -> None:
    with tarfile.open(upstream_v1_11) as tar:
        tar.extractall(tmp_path / "src", filter="data")
    repo = tmp_path / "src" / "manifests-1.11.0"
    kfdef = load_kfdef(write_kfdef(tmp_path / "demo", repo, UPSTREAM_APPS), real_catalog)
    plan = plan_kfdef(kfdef, real_catalog)  # generate, then plan: no PlanError
    hoist = plan.hoisted["Namespace kubeflow"]
    assert (plan.steps["Namespace kubeflow"].app, hoist.needed_by, hoist.needed_by_app) == (
        "katib",
        "Deployment.apps kubeflow/training-operator",
        "training-operator",
    )
    assert plan.waves()[0].count("Namespace kubeflow") == 1
    assert list(plan.hoisted) == ["Namespace kubeflow"]
    text = format_plan(plan)
    assert (
        "  Namespace kubeflow  [katib]\n"
        "      hoisted ahead of katib's dependsOn: Deployment.apps kubeflow/training-operator [training-operator]"
        " needs it (its Namespace is Active), as do 17 more object(s) of other applications"
    ) in text
    summary = format_summary(summarize(plan))  # what `kfctl plan` prints by default says the same, briefly
    assert (
        "  Namespace kubeflow  [katib]\n"
        "      hoisted ahead of katib's dependsOn: Deployment.apps kubeflow/training-operator [training-operator]"
        " needs it (its Namespace is Active), as do 17 more object(s) of other applications"
    ) in summary
    # Katib's pod mutator admits the pods of the `kubeflow` namespace: its configuration waits for katib's own
    # controller (which serves it); the training operator's pods wait for that backend. Katib's dependsOn holds
    # katib only until the training operator's CRDs are served, so this is no cycle.
    assert (
        "  MutatingWebhookConfiguration.admissionregistration.k8s.io katib.kubeflow.org waits for"
        " Deployment.apps kubeflow/katib-controller\n"
        "      admits-its-needs: "
    ) in summary
    operator = {e.dependency: e.rule.name for e in plan.deps["Deployment.apps kubeflow/training-operator"]}
    assert operator["webhook backend kubeflow/katib-controller"] == "pod-webhook"
    assert {e.dependency for e in plan.deps["application training-operator"]} == {
        s.id
        for s in plan.objects()
        if s.app == "training-operator" and s.key and s.key.kind == "CustomResourceDefinition"
    }
    katib_deployment = {e.dependency for e in plan.deps["Deployment.apps kubeflow/katib-controller"]}
    assert {"application cert-manager", "application training-operator"} <= katib_deployment
    hoisted = [s for wave in json.loads(json.dumps(plan_as_dict(plan)))["waves"] for s in wave if "hoisted" in s]
    assert [(s["step"], s["hoisted"]["neededBy"]["step"], s["hoisted"]["rule"]) for s in hoisted] == [
        ("Namespace kubeflow", "Deployment.apps kubeflow/training-operator", "namespace")
    ]
