"""`kfctl plan`'s default output: the summary of a plan, which must fit one screen for the whole catalog.

Each row builds a plan from objects of our own and gives the exact summary. The `tuner` row is the shape of
upstream katib (see test_plan_podhooks.py): a pod mutator in the namespace of the operator it dependsOn, so
shared namespaces are hoisted and workloads are ordered around the webhook.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_catalog import make_app, supported
from test_plan_podhooks import mutator, plan_of

from kfctl.app.plan import inventory_as_dict, plan_as_dict, plan_kfdef, step_ref
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.objects import ObjectKey, key_of
from kfctl.plan.duplicates import Copy
from kfctl.plan.graph import ExternalCheck, Plan, build_plan
from kfctl.plan.summary import summarize
from kfctl.plan.text import format_summary, inventory_line

SCREEN = 40  # lines: the summary of every component of the catalog fits a terminal without scrolling

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ml"}}
CERT = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "serving", "namespace": "ml"}}


def external_and_copy() -> Plan:
    """serving's Certificate needs the cert-manager the cluster provides; `copy` renders serving's Namespace."""
    return build_plan(
        [("serving", [NS, CERT, CM]), ("copy", [])],
        depends_on={"serving": ["cert-manager"]},
        externals=[ExternalCheck("cert-manager", ("certificates.cert-manager.io",))],
        copies=[Copy(ObjectKey("", "Namespace", "", "ml"), "serving", "copy")],
    )


def lone_application(*, secret: bool = False) -> Plan:
    """settings' ConfigMap, and with ``secret`` a Secret kfctl generates for it (not in its render)."""
    generated = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ml"}}
    return build_plan(
        [("settings", [CM, *([generated] if secret else [])])],
        depends_on={},
        generated=[key_of(generated)] if secret else [],
    )


CASES: list[tuple[str, Callable[[], Plan], str]] = [
    (
        "pod-webhook-and-hoisting",
        lambda: plan_of(mutator()),
        """\
Plan: 9 objects in 3 application(s), 7 wave(s)

  APPLICATION  OBJECTS  NAMESPACES  AFTER (dependsOn)  WAITS ON OBJECTS OF
  operator           1  ml                             tuner ×1
  tuner              6  ml          operator           operator ×1
  serving            2  ml, plain                      tuner ×3

Shared objects applied ahead of their application's dependsOn:
  Namespace ml  [tuner]
      hoisted ahead of tuner's dependsOn: Deployment.apps ml/operator [operator] needs it (its Namespace is Active), \
as do 1 more object(s) of other applications
  Namespace plain  [tuner]
      hoisted ahead of tuner's dependsOn: Deployment.apps plain/elsewhere [serving] needs it (its Namespace is Active)

Pod webhooks (a failurePolicy=Fail webhook admits these workloads' pods):
  MutatingWebhookConfiguration.admissionregistration.k8s.io tuner waits for Deployment.apps ml/operator, \
Deployment.apps ml/tuner
      admits-its-needs: it would admit the pods of a workload its own backend needs: registered once that workload \
is Available
  Deployment.apps ml/serving, Deployment.apps ml/tuner-ui wait for webhook backend ml/tuner-webhook
      pod-webhook: a failurePolicy=Fail webhook admits its pods: they are created once its backend answers

Longest chain of waits (6 steps):
  Namespace ml → Deployment.apps ml/operator → application operator → Deployment.apps ml/tuner
  → webhook backend ml/tuner-webhook → Deployment.apps ml/serving""",
    ),
    (
        "external-application-and-identical-copy",
        external_and_copy,
        """\
Plan: 3 objects in 3 application(s), 4 wave(s)
  (the 4 objects generate renders, less 1 identical copy applied once)

  APPLICATION    OBJECTS  NAMESPACES  AFTER (dependsOn)  WAITS ON OBJECTS OF
  cert-manager  external
  serving              3  ml          cert-manager       cert-manager ×1
  copy                 1  -

Objects several applications render (counted under each above, once in the total):
  Namespace ml  applied once: identical copy in application copy

Longest chain of waits (4 steps):
  external application cert-manager → application cert-manager → Namespace ml
  → Certificate.cert-manager.io ml/serving""",
    ),
    (
        # No dependsOn, nothing shared, nothing to wait for: the table alone.
        "one-application-that-waits-for-nothing",
        lone_application,
        """\
Plan: 1 object in 1 application(s), 1 wave(s)

  APPLICATION  OBJECTS  NAMESPACES  AFTER (dependsOn)  WAITS ON OBJECTS OF
  settings           1  ml""",
    ),
    (
        # Issue 31 item 8: generate says "Rendered … 1 object", the plan 2: the line below the headline says why.
        "a-secret-kfctl-generates",
        lambda: lone_application(secret=True),
        """\
Plan: 2 objects in 1 application(s), 1 wave(s)
  (the 1 object generate renders, plus 1 Secret(s) kfctl generates in the cluster at apply)

  APPLICATION  OBJECTS  NAMESPACES  AFTER (dependsOn)  WAITS ON OBJECTS OF
  settings           2  ml""",
    ),
]


@pytest.mark.parametrize(("case", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_summary_of_a_plan(case: str, build: Callable[[], Plan], expected: str) -> None:
    assert format_summary(summarize(build())) == expected


def test_json_counts_an_identical_copy_under_each_of_its_applications_once_in_the_total() -> None:
    """As apply, diff and status count it (issue 29 item 6): `copy` renders serving's Namespace, its only object."""
    summary = plan_as_dict(external_and_copy())["summary"]
    assert [(a["name"], a["objects"]) for a in summary["applications"]] == [
        ("cert-manager", 0),
        ("serving", 3),
        ("copy", 1),
    ]
    assert (summary["objects"], summary["shared"]) == (3, 1)
    assert [(c["step"], c["copiesIn"]) for c in summary["copies"]] == [("Namespace ml", ["copy"])]


def test_the_longest_chain_counts_only_waits() -> None:
    """A RoleBinding is applied after its Role (order only): that edge makes no chain longer."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "ml"}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "r", "namespace": "ml"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
    }
    plan = build_plan([("a", [NS, role, binding])], depends_on={})
    assert summarize(plan).longest_chain == ("Namespace ml", "Role.rbac.authorization.k8s.io ml/r")


def test_json_keeps_the_waves_and_adds_the_summary() -> None:
    plan = plan_of(mutator())
    data = plan_as_dict(plan)
    assert [s["step"] for s in data["waves"][0]] == ["Namespace ml", "Namespace plain"]
    summary = data["summary"]
    assert summary["applications"][1] == {
        "name": "tuner",
        "objects": 6,
        "namespaces": ["ml"],
        "external": False,
        "dependsOn": ["operator"],
        "waitsOn": {"operator": 1},
    }
    assert summary["hoisted"][0] == step_ref(plan, "Namespace ml") | {
        "application": "tuner",
        "hoisted": data["waves"][0][0]["hoisted"],
    }
    assert data["waves"][0][0]["hoisted"]["neededBy"] == step_ref(plan, "Deployment.apps ml/operator")
    assert (
        step_ref(plan, "Deployment.apps ml/serving")
        | {
            "dependency": {"step": "webhook backend ml/tuner-webhook"},
            "rule": "pod-webhook",
        }
        in (summary["podWebhooks"])
    )
    assert summary["longestChain"][-1] == step_ref(plan, "Deployment.apps ml/serving")


def _object(group: str, version: str, kind: str, namespace: str, name: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind, "namespace": namespace, "name": name}


# -o json names a step by its id and, for an object, by the object's own fields: no reader parses the id.
JSON_STEPS = [
    ("Namespace ml", {"object": _object("", "v1", "Namespace", "", "ml")}),
    ("Deployment.apps ml/serving", {"object": _object("apps", "v1", "Deployment", "ml", "serving")}),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io tuner",
        {"object": _object("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "", "tuner")},
    ),
    ("webhook backend ml/tuner-webhook", {}),
    ("application operator", {}),
]


@pytest.mark.parametrize(
    ("sid", "fields"), JSON_STEPS, ids=["core-cluster-scoped", "namespaced", "grouped-cluster-scoped", "backend", "app"]
)
def test_json_names_a_step_by_its_id_and_an_object_by_its_fields(sid: str, fields: dict[str, object]) -> None:
    plan = plan_of(mutator())
    assert step_ref(plan, sid) == {"step": sid, **fields}
    every_mention = [s for wave in plan_as_dict(plan)["waves"] for s in wave if s["step"] == sid]
    assert [{k: s[k] for k in ("step", "object") if k in s} for s in every_mention] == [{"step": sid, **fields}]


def test_the_whole_catalog_summary_fits_one_screen(tmp_path: Path, real_catalog: Catalog) -> None:
    app = make_app(tmp_path, real_catalog, platform="generic", components=supported(real_catalog, "generic"))
    plan = plan_kfdef(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
    text = format_summary(summarize(plan))
    assert len(text.splitlines()) + 2 <= SCREEN, text  # + the CLI's blank line and its pointer to --full
    assert len(plan.applications) == len(supported(real_catalog, "generic"))
    for app_name in supported(real_catalog, "generic"):
        assert f"\n  {app_name} " in text


INVENTORY = "Inventory and lock (kfctl's record of this install): namespace"

# The KfDef's metadata.namespace holds kfctl's record, not the objects: `kfctl plan` says where it is and who makes
# it. (namespace → the exact line, the application that creates it.)
INVENTORY_ROWS = [
    ("ml", f"{INVENTORY} ml, created by application serving", "serving"),
    ("elsewhere", f"{INVENTORY} elsewhere, where no object goes: apply creates it for the record alone", None),
]


@pytest.mark.parametrize(("namespace", "line", "creator"), INVENTORY_ROWS, ids=["created", "record-alone"])
def test_plan_says_where_the_inventory_is_and_who_creates_it(namespace: str, line: str, creator: str | None) -> None:
    plan = external_and_copy()
    assert inventory_line(plan, namespace) == line
    assert inventory_as_dict(plan, namespace) == {"namespace": namespace, "createdBy": creator}


def test_an_inventory_namespace_objects_use_but_none_creates_is_created_by_apply() -> None:
    plan = lone_application()  # a ConfigMap in ml, and no Namespace ml
    assert inventory_line(plan, "ml") == f"{INVENTORY} ml, which no application creates: apply creates it"
