"""Readiness rules as data (kfctl.health.waitrules): a live object in, the exact verdict and message out, for the
kinds kfctl ships a rule for and for rules a KfDef adds or replaces in spec.waitRules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import cast

import pytest
import yaml

from kfctl.app.argocd_settings import HEALTH_CHECKS
from kfctl.app.bundle import Bundle
from kfctl.catalog.model import Catalog
from kfctl.config.loader import WAIT_RULES_HINT, parse_kfdef
from kfctl.engine.steps import ObjectStep, engine_step
from kfctl.errors import ConfigError
from kfctl.health.model import Health
from kfctl.health.registry import RULES, needs_wait
from kfctl.health.registry import health_of as judge
from kfctl.health.waitrules import CODED_KINDS, SHIPPED, Match, WaitRule, WaitRules
from kfctl.k8s.api import Cluster
from kfctl.plan.graph import build_plan


def health_of(manifest: str, rules: WaitRules = SHIPPED) -> Health:
    return judge(yaml.safe_load(manifest), age_seconds=60.0, wait_rules=rules)


def obj(api_version: str, kind: str, status: str = "{}", metadata: str = "{name: x}") -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {metadata}\nstatus: {status}\n"


CERT, APISERVICE = "cert-manager.io/v1", "apiregistration.k8s.io/v1"
ISVC, TRAINJOB, V1 = "serving.kserve.io/v1beta1", "trainer.kubeflow.org/v1alpha1", "kubeflow.org/v1"
SHIPPED_CASES = [
    pytest.param(
        obj(CERT, "Certificate"), Health("progressing", "waiting for cert-manager to report Ready"), id="cert-fresh"
    ),
    pytest.param(
        obj(
            CERT,
            "Certificate",
            "{conditions: [{type: Ready, status: 'False', reason: DoesNotExist,"
            " message: Issuing certificate as Secret does not exist}]}",
        ),
        Health("progressing", "not ready: DoesNotExist: Issuing certificate as Secret does not exist"),
        id="cert-issuing",
    ),
    pytest.param(
        obj(CERT, "Certificate", "{conditions: [{type: Ready, status: 'True'}]}"), Health("ready", "ready"), id="cert"
    ),
    pytest.param(
        obj(
            CERT,
            "Certificate",
            "{observedGeneration: 2, conditions: [{type: Ready, status: 'True'}]}",
            "{generation: 3}",
        ),
        Health("progressing", "waiting for the controller to observe generation 3 (seen 2)"),
        id="cert-stale-ready",
    ),
    pytest.param(
        obj(CERT, "ClusterIssuer", "{conditions: [{type: Ready, status: 'True'}]}"), Health("ready", "ready"), id="ci"
    ),
    pytest.param(obj(APISERVICE, "APIService"), Health("progressing", "waiting for Available"), id="apiservice-fresh"),
    pytest.param(
        obj(
            APISERVICE,
            "APIService",
            "{conditions: [{type: Available, status: 'False', reason: MissingEndpoints,"
            " message: endpoints for service/metrics-server in kube-system have no addresses}]}",
        ),
        Health(
            "progressing",
            "not available: MissingEndpoints: endpoints for service/metrics-server in kube-system have no addresses",
        ),
        id="apiservice-no-endpoints",
    ),
    pytest.param(
        obj(APISERVICE, "APIService", "{conditions: [{type: Available, status: 'True'}]}"),
        Health("ready", "available"),
        id="apiservice",
    ),
    pytest.param(
        obj(
            ISVC,
            "InferenceService",
            "{conditions: [{type: PredictorReady, status: 'True'}, {type: Ready, status: 'False', reason: "
            "IngressNotConfigured}]}",
        ),
        Health("progressing", "not ready: IngressNotConfigured"),
        id="isvc-ingress",
    ),
    pytest.param(
        obj(ISVC, "InferenceService", "{conditions: [{type: Ready, status: 'True'}]}"),
        Health("ready", "ready"),
        id="isvc",
    ),
    pytest.param(
        obj(TRAINJOB, "TrainJob", "{conditions: [{type: Created, status: 'True'}]}"),
        Health("progressing", "waiting for Complete"),
        id="trainjob-running",
    ),
    pytest.param(
        obj(TRAINJOB, "TrainJob", "{conditions: [{type: Complete, status: 'True', reason: JobsCompleted}]}"),
        Health("ready", "complete"),
        id="trainjob-complete",
    ),
    pytest.param(
        obj(
            TRAINJOB,
            "TrainJob",
            "{conditions: [{type: Failed, status: 'True', reason: JobsFailed, message: trainer-node failed}]}",
        ),
        Health("failed", "failed: JobsFailed: trainer-node failed"),
        id="trainjob-failed",
    ),
    pytest.param(
        obj(V1, "PyTorchJob", "{conditions: [{type: Created, status: 'True'}, {type: Running, status: 'True'}]}"),
        Health("progressing", "waiting for Succeeded"),
        id="pytorchjob-running",
    ),
    pytest.param(
        obj(V1, "TFJob", "{conditions: [{type: Running, status: 'False'}, {type: Succeeded, status: 'True'}]}"),
        Health("ready", "succeeded"),
        id="tfjob-succeeded",
    ),
    pytest.param(
        obj(V1, "Experiment", "{conditions: [{type: Failed, status: 'True', reason: ExperimentFailed}]}"),
        Health("failed", "failed: ExperimentFailed"),
        id="experiment-failed",
    ),
    # A kind without a rule is judged by kstatus' conventions (kfctl.health.custom), not by a rule of its group.
    pytest.param(
        obj("serving.kserve.io/v1alpha1", "ClusterServingRuntime", "{conditions: [{type: Ready, status: 'True'}]}"),
        Health("ready", "ready"),
        id="no-rule-kstatus",
    ),
    pytest.param(
        obj(V1, "Profile", "{conditions: [{type: Failed, message: namespace exists}]}"),
        Health("ready", "status reported, no Ready condition"),
        id="no-rule-profile",
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), SHIPPED_CASES)
def test_the_rules_kfctl_ships(manifest: str, expected: Health) -> None:
    assert health_of(manifest) == expected


KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: demo}
spec:
  applications: [{name: common}]
  waitRules:
"""


def load_rules(rules: str, catalog: Catalog) -> WaitRules:
    text = KFDEF + textwrap.indent(textwrap.dedent(rules), "    ")
    kfdef = parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog)
    return SHIPPED.with_overrides(kfdef.wait_rules)


# A kind of the user's (added) and InferenceService (kfctl's rule replaced: healthy once the predictor serves).
MINE = """\
- apiGroup: db.example.com
  kind: Database
  ready: [{condition: Deployed}]
  failed:
    - {condition: Failed}
    - {field: status.phase, equals: Error}
    - {condition: Ready, status: "False"}
- apiGroup: serving.kserve.io
  kind: InferenceService
  ready: [{condition: PredictorReady}]
- apiGroup: ""
  kind: ConfigMap
  ready: [{field: data.ready, equals: true}]
- apiGroup: example.com
  kind: Pool
  ready: [{field: status.readyReplicas, equals: 3}]
"""
DB = "db.example.com/v1"
BY_MINE = "(the KfDef's wait rule at kfdef.yaml:7:7)"  # a failure names the rule that says so
KFDEF_CASES = [
    pytest.param(obj(DB, "Database"), Health("progressing", "waiting for Deployed"), id="db-fresh"),
    pytest.param(
        obj(DB, "Database", "{conditions: [{type: Deployed, status: 'False', reason: Provisioning}]}"),
        Health("progressing", "not deployed: Provisioning"),
        id="db-provisioning",
    ),
    pytest.param(
        obj(DB, "Database", "{conditions: [{type: Deployed, status: 'True'}]}"), Health("ready", "deployed"), id="db"
    ),
    pytest.param(
        obj(DB, "Database", "{phase: Error, conditions: [{type: Deployed, status: 'True'}]}"),
        Health("failed", f"status.phase is Error {BY_MINE}"),
        id="db-failed-field-first",
    ),
    pytest.param(
        obj(DB, "Database", "{conditions: [{type: Ready, status: 'False', reason: DiskFull, message: 0 bytes left}]}"),
        Health("failed", f"ready is False: DiskFull: 0 bytes left {BY_MINE}"),
        id="db-failed-condition-status",
    ),
    pytest.param(
        obj(
            ISVC,
            "InferenceService",
            "{conditions: [{type: PredictorReady, status: 'True'}, {type: Ready, status: 'False', reason: "
            "IngressNotConfigured}]}",
        ),
        Health("ready", "predictor ready"),
        id="isvc-replaced",
    ),
    pytest.param(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {ready: 'true'}\n",
        Health("ready", "data.ready is true"),
        id="builtin-kind-field",
    ),
    pytest.param(
        obj("example.com/v1", "Pool", "{readyReplicas: 2}"),
        Health("progressing", "waiting for status.readyReplicas=3"),
        id="number-not-yet",
    ),
    pytest.param(
        obj("example.com/v1", "Pool", "{readyReplicas: 3}"), Health("ready", "status.readyReplicas is 3"), id="number"
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), KFDEF_CASES)
def test_a_kfdefs_rules_add_kinds_and_replace_kfctls(manifest: str, expected: Health, catalog: Catalog) -> None:
    assert health_of(manifest, load_rules(MINE, catalog)) == expected


def test_a_kfdef_rule_is_the_one_the_engine_and_the_planner_use(catalog: Catalog) -> None:
    kfdef = parse_kfdef(KFDEF + textwrap.indent(MINE, "    "), path=Path("kfdef.yaml"), catalog=catalog)
    database = yaml.safe_load(obj(DB, "Database", "{phase: Error}"))
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "a"}}
    plan = Bundle(kfdef, (("common", (database, configmap)),), {}).plan()
    assert plan.wait_rules == SHIPPED.with_overrides(kfdef.wait_rules)
    steps = {s.key.kind: s for s in plan.objects()}
    assert (steps["Database"].wait, steps["ConfigMap"].wait) == (True, True)  # a ConfigMap is waited on only by rule
    assert build_plan([("app", [configmap])], depends_on={}).objects()[0].wait is False
    step = engine_step(steps["Database"], plan.wait_rules)
    assert isinstance(step, ObjectStep)
    assert step.health(NO_CLUSTER, database) == Health("failed", f"status.phase is Error {BY_MINE}")


class _NoCluster:
    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"a verdict by rule reads nothing from the cluster (asked {name})")


NO_CLUSTER = cast(Cluster, _NoCluster())


def test_a_rule_records_where_the_kfdef_wrote_it(catalog: Catalog) -> None:
    text = KFDEF + "    - {apiGroup: db.example.com, kind: Database, failed: [{condition: Failed}]}\n"
    (rule,) = parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog).wait_rules
    assert rule == WaitRule("db.example.com", "Database", (), (Match(condition="Failed"),), source="kfdef.yaml:7:7")


@pytest.mark.parametrize(
    ("group", "kind", "rules", "expected"),
    [
        pytest.param("cert-manager.io", "Certificate", SHIPPED, True, id="shipped-rule"),
        pytest.param("apps", "Deployment", SHIPPED, True, id="coded"),
        pytest.param("", "ConfigMap", SHIPPED, False, id="builtin"),
        pytest.param(
            "",
            "ConfigMap",
            WaitRules([WaitRule("", "ConfigMap", (Match(field="data.x", equals="1"),))]),
            True,
            id="builtin-with-rule",
        ),
        pytest.param("example.com", "Widget", SHIPPED, True, id="custom-without-rule"),
    ],
)
def test_what_is_waited_on(group: str, kind: str, rules: WaitRules, expected: bool) -> None:
    assert needs_wait(group, kind, rules) is expected


def test_the_kinds_judged_by_code_are_the_ones_a_rule_cannot_replace() -> None:
    assert frozenset(RULES) | {("", "PersistentVolumeClaim")} == CODED_KINDS
    assert not CODED_KINDS & SHIPPED.kinds()


BAD_RULES = [
    pytest.param(
        "- {apiGroup: db.example.com, kind: Database, readyy: [{condition: Deployed}]}\n",
        [
            'kfdef.yaml:7:50 spec.waitRules[0].readyy: unknown field "readyy" (did you mean "ready"?)',
        ],
        id="misspelt-key",
    ),
    pytest.param(
        "- kind: Database\n  ready: [{condition: Deployed}]\n",
        [
            "kfdef.yaml:7:7 spec.waitRules[0]: apiGroup is required: the kind's API group as its "
            'apiVersion starts (serving.kserve.io for serving.kserve.io/v1beta1), "" for the core '
            "group",
        ],
        id="no-api-group",
    ),
    pytest.param(
        "- {apiGroup: db.example.com/v1, kind: Database, ready: [{condition: Deployed}]}\n",
        [
            "kfdef.yaml:7:8 spec.waitRules[0].apiGroup: must be an API group (lowercase DNS name, or "
            "\"\" for the core group), got 'db.example.com/v1'",
        ],
        id="api-version-for-group",
    ),
    pytest.param(
        "- apiGroup: db.example.com\n  kind: Database\n  ready: [{condition: Deployed, field: "
        "status.phase, equals: Ready}]\n",
        [
            "kfdef.yaml:9:15 spec.waitRules[0].ready[0]: give condition (a status.conditions type, "
            "as Ready) or field (a dotted path, as status.phase), not both",
        ],
        id="condition-and-field",
    ),
    pytest.param(
        '- apiGroup: db.example.com\n  kind: Database\n  ready: [{condition: Deployed, status: "true"}]\n',
        [
            "kfdef.yaml:9:37 spec.waitRules[0].ready[0].status: must be one of True, False, Unknown, "
            "got 'true' (did you mean \"True\"?)",
        ],
        id="status-not-a-status",
    ),
    pytest.param(
        "- apiGroup: db.example.com\n  kind: Database\n  ready: [{field: status.phase}]\n",
        [
            "kfdef.yaml:9:15 spec.waitRules[0].ready[0]: field status.phase needs equals: the value "
            "(text, number or true/false) that means the verdict",
        ],
        id="field-without-equals",
    ),
    pytest.param(
        '- apiGroup: db.example.com\n  kind: Database\n  failed: [{field: "status..phase", equals: Error}]\n',
        [
            'kfdef.yaml:9:17 spec.waitRules[0].failed[0].field: "status..phase" is not a dotted path '
            "of field names, as status.phase",
        ],
        id="field-not-a-path",
    ),
    pytest.param(
        "- apiGroup: db.example.com\n  kind: Database\n",
        [
            "kfdef.yaml:7:7 spec.waitRules[0]: the rule for Database says nothing: give ready, "
            "failed or both, each a list of conditions or fields",
        ],
        id="says-nothing",
    ),
    pytest.param(
        "- apiGroup: apps\n  kind: Deployment\n  ready: [{condition: Available}]\n",
        [
            "kfdef.yaml:8:7 spec.waitRules[0].kind: Deployment (apps) is judged by kfctl's own rule, "
            "which a wait rule cannot replace; remove the rule (wait rules are for custom resources)",
        ],
        id="coded-kind",
    ),
    pytest.param(
        "- {apiGroup: db.example.com, kind: Database, ready: [{condition: Deployed}]}\n- {apiGroup: "
        "db.example.com, kind: Database, failed: [{condition: Failed}]}\n",
        [
            "kfdef.yaml:8:34 spec.waitRules[1].kind: a second rule for Database (db.example.com); "
            "the first is at line 7",
        ],
        id="twice",
    ),
    pytest.param(
        '- apiGroup: db.example.com\n  kind: Database\n  ready: [{condition: Deployed, equals: "True"}]\n',
        [
            "kfdef.yaml:9:37 spec.waitRules[0].ready[0].equals: equals goes with field; a "
            "condition's value is its status",
        ],
        id="equals-with-condition",
    ),
    pytest.param(
        "- apiGroup: db.example.com\n  kind: Database\n  ready: {condition: Deployed}\n",
        [
            "kfdef.yaml:9:7 spec.waitRules[0].ready: must be a list, got a mapping",
        ],
        id="ready-not-a-list",
    ),
    pytest.param(
        "- apiGroup: db.example.com\n  kind: Database\n  ready: [Deployed]\n",
        [
            "kfdef.yaml:9:15 spec.waitRules[0].ready[0]: must be a mapping, got a string",
        ],
        id="match-not-a-mapping",
    ),
]


@pytest.mark.parametrize(("rules", "expected"), BAD_RULES)
def test_a_bad_rule_is_refused_where_it_is_written(rules: str, expected: list[str], catalog: Catalog) -> None:
    with pytest.raises(ConfigError) as info:
        load_rules(rules, catalog)
    assert info.value.details == expected
    assert info.value.hint is not None and info.value.hint.startswith(WAIT_RULES_HINT)


def test_the_argo_cd_export_judges_kubeflows_kinds_by_the_same_rules() -> None:
    """kfctl apply and Argo CD syncing kfctl's export wait for the same conditions (kfctl.app.argocd_settings)."""
    lua = HEALTH_CHECKS[("trainer.kubeflow.org", "TrainJob")]
    assert 'if c.type == "Failed" then' in lua and 'elseif c.type == "Complete" then' in lua
    kubeflow = {(r.group, r.kind) for r in SHIPPED if r.group.endswith("kubeflow.org")}
    assert kubeflow == {
        ("trainer.kubeflow.org", "TrainJob"),
        ("kubeflow.org", "Experiment"),
        *(("kubeflow.org", k) for k in ("PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob")),
    }
    assert kubeflow <= set(HEALTH_CHECKS)
