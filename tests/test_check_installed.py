"""`kfctl check` after an install: one row per situation, the exact verdict and message of the check it
concerns.

The base situation passes: a reachable cluster that serves TFJob, PyTorchJob and InferenceService (their CRDs
Established), whose API server accepts the dry runs, and whose applications are ready.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, obj, served_crd, write_app

from kfctl.app.check import check_installed
from kfctl.catalog.load import load_catalog
from kfctl.check.model import CheckReport, InstalledContext
from kfctl.check.runner import installed_checks, run_checks, select, served_checks
from kfctl.check.samples import SAMPLES
from kfctl.config.loader import load_kfdef
from kfctl.errors import UsageError
from kfctl.health.model import Health, failed, progressing, ready
from kfctl.k8s.api import ApiError
from kfctl.objects import ObjectKey

NAME = "kfctl-check-test"
APPS = ("training-operator", "kserve")
HOOK = "inferenceservice.kserve-webhook-server.defaulter"
SERVICE = "kserve-webhook-server-service"
CALL = f'Internal error occurred: failed calling webhook "{HOOK}": failed to call webhook: Post "https://{SERVICE}.kubeflow.svc:443/mutate-serving-kserve-io-v1beta1-inferenceservice?timeout=10s"'
NO_ENDPOINTS = f'{CALL}: no endpoints available for service "{SERVICE}"'
REFUSED = f"{CALL}: dial tcp 10.96.0.10:443: connect: connection refused"
NO_HANDLER = f"{CALL}: the server could not find the requested resource"  # a 404 from the webhook server
NO_SERVICE = f'{CALL}: service "{SERVICE}" not found'
UNTRUSTED = f"{CALL}: tls: failed to verify certificate: x509: certificate signed by unknown authority"
DENIAL = (
    f'admission webhook "{HOOK}" denied the request: the InferenceService "{NAME}" is invalid: '
    "predictor: exactly one of model or a framework must be given"
)
ISVC = ObjectKey("serving.kserve.io", "InferenceService", "kubeflow", NAME)


def webhook_config(*, ca: bool = True) -> dict[str, Any]:
    client: dict[str, Any] = {"service": {"namespace": "kubeflow", "name": SERVICE, "port": 443}}
    if ca:
        client["caBundle"] = "Q0E="
    return obj(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "inferenceservice.serving.kserve.io",
        webhooks=[{"name": HOOK, "clientConfig": client, "failurePolicy": "Fail"}],
    )


def endpoints(*, ready_: bool) -> dict[str, Any]:
    return obj(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        f"{SERVICE}-abcde",
        "kubeflow",
        labels={"kubernetes.io/service-name": SERVICE},
        endpoints=[{"addresses": ["10.0.0.7"], "conditions": {"ready": ready_}}],
    )


def cluster() -> FakeCluster:
    c = FakeCluster()
    c.put(served_crd("kubeflow.org", "TFJob", "tfjobs"))
    c.put(served_crd("kubeflow.org", "PyTorchJob", "pytorchjobs"))
    c.put(served_crd("serving.kserve.io", "InferenceService", "inferenceservices"))
    c.put(webhook_config())
    c.put(obj("v1", "Service", SERVICE, "kubeflow", spec={"ports": [{"port": 443}]}))
    c.put(endpoints(ready_=True))
    return c


ALL_READY: dict[str, Health] = {app: ready("12 objects ready") for app in APPS}


def run(c: FakeCluster, *, health: Mapping[str, Health] | None = ALL_READY) -> CheckReport:
    """The checks, with a clock that moves only when a check sleeps."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    ctx = InstalledContext(
        cluster=c,
        health=lambda: health,
        namespaces={"training-operator": "kubeflow", "kserve": "kubeflow"},
        suffix="test",
        clock=lambda: now[0],
        sleep=sleep,
    )
    return run_checks(installed_checks(list(APPS), APPS), ctx)


def verdict(report: CheckReport, name: str) -> tuple[str, str, str]:
    r = next(r for r in report.results if r.name == name)
    return r.verdict, r.message, r.hint


def test_the_base_situation_passes_every_check() -> None:
    report = run(cluster())
    assert [(r.category, r.name, r.verdict) for r in report.results] == [
        ("cluster", "cluster-reachable", "pass"),
        ("health", "training-operator", "pass"),
        ("health", "kserve", "pass"),
        ("training", "tfjob", "pass"),
        ("training", "pytorchjob", "pass"),
        ("serving", "inferenceservice", "pass"),
    ]
    assert verdict(report, "tfjob")[1] == (
        "the API server and its admission webhooks accept a new TFJob in kubeflow (server-side dry run, nothing stored)"
    )


def no_crd(c: FakeCluster) -> None:
    del c.objects[
        ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "inferenceservices.serving.kserve.io")
    ]


def no_ready_endpoint(c: FakeCluster) -> None:
    c.put(endpoints(ready_=False))
    c.fail(ISVC, ApiError(500, NO_ENDPOINTS, reason="InternalError"))


def refused(c: FakeCluster) -> None:
    """Refused for longer than a starting webhook may take (SETTLE s, tried every second)."""
    c.fail(ISVC, *[ApiError(500, REFUSED, reason="InternalError")] * 20)


def starting(c: FakeCluster) -> None:
    """The backend is Ready but registers its handler 3 s later: a 404, then it answers."""
    c.fail(ISVC, *[ApiError(500, NO_HANDLER, reason="InternalError")] * 3)


def no_service(c: FakeCluster) -> None:
    del c.objects[ObjectKey("", "Service", "kubeflow", SERVICE)]
    c.fail(ISVC, ApiError(500, NO_SERVICE, reason="InternalError"))


def untrusted(c: FakeCluster) -> None:
    c.put(webhook_config(ca=False))
    c.fail(ISVC, ApiError(500, UNTRUSTED, reason="InternalError"))


def denied(c: FakeCluster) -> None:
    c.fail(ISVC, ApiError(400, DENIAL, reason="BadRequest"))


def schema(c: FakeCluster) -> None:
    causes = [{"reason": "FieldValueRequired", "field": "spec.predictor", "message": "Required value"}]
    c.fail(ISVC, ApiError(422, "InferenceService is invalid", reason="Invalid", causes=causes))


NOT_SERVED_HINT = (
    "kfctl apply APPDIR installs it (kfctl status APPDIR shows what is missing); an application marked "
    "`external: true` must be installed by whoever provides it"
)
BACKEND_HINT = (
    "the component's controller is not running or not ready: kfctl status APPDIR names its Deployment and why "
    "(kubectl get pods -n NAMESPACE, kubectl logs)"
)

CASES: list[tuple[str, Callable[[FakeCluster], None], tuple[str, str, str]]] = [
    (
        "crd-missing",
        no_crd,
        (
            "fail",
            "the cluster does not serve InferenceService (serving.kserve.io/v1beta1): is kserve installed?",
            NOT_SERVED_HINT,
        ),
    ),
    (
        "no-ready-endpoint",
        no_ready_endpoint,
        (
            "fail",
            f'webhook "{HOOK}" cannot be called: backend not ready — Service kubeflow/{SERVICE} has no ready '
            f"endpoint (API server: {NO_ENDPOINTS})",
            BACKEND_HINT,
        ),
    ),
    (
        "connection-refused",
        refused,
        ("fail", f'webhook "{HOOK}" cannot be called: backend not ready (API server: {REFUSED})', BACKEND_HINT),
    ),
    (
        "handler-registered-after-ready",
        starting,
        (
            "pass",
            "the API server and its admission webhooks accept a new InferenceService in kubeflow (server-side dry "
            "run, nothing stored)",
            "",
        ),
    ),
    (
        "service-missing",
        no_service,
        (
            "fail",
            f'webhook "{HOOK}" cannot be called: its Service kubeflow/{SERVICE} does not exist (API server: '
            f"{NO_SERVICE})",
            "kfctl apply APPDIR re-creates it",
        ),
    ),
    (
        "ca-bundle-not-injected",
        untrusted,
        (
            "fail",
            f'webhook "{HOOK}" cannot be called: the API server does not trust its certificate (CA bundle not '
            f"injected or stale): {UNTRUSTED}",
            "cert-manager's cainjector copies the CA into the webhook configuration (annotation "
            "cert-manager.io/inject-ca-from): check that cert-manager-cainjector runs and that the webhook's "
            "Certificate is Ready (kfctl status APPDIR)",
        ),
    ),
    (
        "webhook-denial",
        denied,
        (
            "fail",
            f"a valid InferenceService was denied: {DENIAL}",
            "the webhook refuses a sample its upstream accepts: a policy engine (Kyverno, Gatekeeper) or a changed "
            "webhook configuration; the log of the webhook's controller says why",
        ),
    ),
    (
        "schema-denial",
        schema,
        (
            "fail",
            "the API server refused a valid InferenceService: schema denial: spec.predictor: Required value",
            "the installed CRD's schema differs from the component's: kfctl diff APPDIR shows what changed",
        ),
    ),
]


@pytest.mark.parametrize(("situation", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_probe_says_why_it_failed(situation: Callable[[FakeCluster], None], expected: tuple[str, str, str]) -> None:
    c = cluster()
    situation(c)
    report = run(c)
    assert verdict(report, "inferenceservice") == expected
    assert verdict(report, "tfjob")[0] == "pass", "one component's failure leaves the others' probes alone"
    assert report.verdict == expected[0]
    assert c.writes == [], "dry runs only"


HEALTH: list[tuple[str, Mapping[str, Health] | None, tuple[str, str, str]]] = [
    ("ready", ALL_READY, ("pass", "12 objects ready", "")),
    (
        "progressing",
        {**ALL_READY, "kserve": progressing("1 of 12 not ready — Deployment.apps kubeflow/kserve: 0/1 available")},
        (
            "fail",
            "progressing: 1 of 12 not ready — Deployment.apps kubeflow/kserve: 0/1 available",
            "kfctl status APPDIR lists every object and why it is not ready; kfctl apply APPDIR waits for it",
        ),
    ),
    (
        "failed",
        {**ALL_READY, "kserve": failed("1 failed of 12")},
        (
            "fail",
            "failed: 1 failed of 12",
            "kfctl status APPDIR lists every object and why it is not ready; kfctl apply APPDIR waits for it",
        ),
    ),
    (
        "no-object-recorded",
        {"training-operator": ready("ok")},
        ("fail", "not installed: no object of it is recorded", "kfctl apply APPDIR installs it"),
    ),
    (
        "never-installed",
        None,
        (
            "fail",
            "not installed: kfctl has no record of this platform on the cluster",
            "install it with kfctl apply APPDIR (or point --kubeconfig/--context at the cluster it is on)",
        ),
    ),
]


@pytest.mark.parametrize(("health", "expected"), [h[1:] for h in HEALTH], ids=[h[0] for h in HEALTH])
def test_an_applications_health_is_what_status_says(
    health: Mapping[str, Health] | None, expected: tuple[str, str, str]
) -> None:
    assert verdict(run(cluster(), health=health), "kserve") == expected


def test_only_the_installed_components_with_a_sample_are_probed() -> None:
    names = [c.name for c in installed_checks(["common", "katib"], {"common", "katib", "cert-manager"})]
    assert names == ["cluster-reachable", "common", "katib", "certificate", "experiment"]
    assert {s.check for s in SAMPLES} == {
        "certificate",
        "tfjob",
        "pytorchjob",
        "trainjob",
        "experiment",
        "inferenceservice",
        "notebook",
        "profile",
        "poddefault",
        "sparkapplication",
    }


@pytest.mark.parametrize(
    ("served", "components", "expected"),
    [
        # Upstream's full platform: no catalog component, the kinds its trees installed.
        ({"trainjob", "smoke-trainjob", "profile", "poddefault"}, set(), ["trainjob", "profile", "poddefault"]),
        # A catalog component is probed even when its kind is not served (the probe then says so).
        (set(), {"kserve"}, ["inferenceservice"]),
        # Helm's cert-manager beside the catalog's training operator.
        ({"certificate"}, {"training-operator"}, ["certificate", "tfjob", "pytorchjob"]),
    ],
    ids=["upstream-trees", "catalog-not-served", "helm-beside-catalog"],
)
def test_a_sample_is_probed_whoever_installed_its_kind(
    served: set[str], components: set[str], expected: list[str]
) -> None:
    checks = installed_checks([], components, served=served)
    assert [c.name for c in checks] == ["cluster-reachable", *expected]


def test_smoke_scenarios_follow_the_served_kinds_too() -> None:
    names = [c.name for c in installed_checks([], set(), smoke=True, served={"trainjob", "smoke-trainjob"})]
    assert names == ["cluster-reachable", "trainjob", "smoke-trainjob"]


def test_served_checks_are_the_samples_whose_every_kind_discovery_knows() -> None:
    c = FakeCluster()
    c.put(served_crd("trainer.kubeflow.org", "TrainJob", "trainjobs"))
    c.put(served_crd("kubeflow.org", "PodDefault", "poddefaults"))
    # poddefault needs PodDefault and Pod (built in); certificate needs Issuer too, which is not served.
    c.put(served_crd("cert-manager.io", "Certificate", "certificates"))
    assert served_checks(c) == {"trainjob", "smoke-trainjob", "poddefault"}


def test_the_poddefault_samples_pod_is_selected_by_its_poddefault_by_the_runs_name() -> None:
    poddefault = next(s for s in SAMPLES if s.check == "poddefault")
    made, pod = poddefault.instantiate(name=NAME, namespace="kubeflow-user-example-com")
    assert made["spec"]["selector"] == {"matchLabels": {"kfctl.kubeflow.org/check": NAME}}
    assert pod["metadata"]["labels"] == {"kfctl.kubeflow.org/check": NAME}
    assert poddefault.namespace_labels == (("app.kubernetes.io/part-of", "kubeflow-profile"),)


def test_a_cluster_scoped_sample_has_no_namespace() -> None:
    profile = next(s for s in SAMPLES if s.check == "profile")
    [made] = profile.instantiate(name=NAME, namespace="kubeflow")
    assert made["metadata"] == {"name": NAME}
    assert made["spec"]["owner"] == {"kind": "User", "name": f"{NAME}@example.com"}


def test_samples_get_the_runs_name_and_the_components_namespace() -> None:
    certificate = next(s for s in SAMPLES if s.check == "certificate")
    issuer, cert = certificate.instantiate(name=NAME, namespace="cert-manager")
    assert issuer["metadata"] == {"name": NAME, "namespace": "cert-manager"}
    assert cert["spec"]["issuerRef"] == {"group": "cert-manager.io", "kind": "Issuer", "name": NAME}
    assert cert["spec"]["dnsNames"] == [f"{NAME}.cert-manager.svc"]


def test_only_and_skip_select_among_the_installed_checks() -> None:
    checks = installed_checks(list(APPS), APPS)
    assert [c.name for c in select(checks, only=("kserve", "inferenceservice"))] == ["kserve", "inferenceservice"]
    with pytest.raises(UsageError, match="unknown check\\(s\\): node-capacity"):
        select(checks, only=("node-capacity",))


def test_a_platform_never_applied_fails_its_health_and_its_probes_name_the_missing_kind(tmp_path: Path) -> None:
    catalog = load_catalog()
    write_app(tmp_path, "common", "training-operator")
    kfdef = load_kfdef(tmp_path / "kfdef.yaml", catalog)
    report = check_installed(kfdef, catalog, open_cluster=FakeCluster, suffix="test")
    assert [(r.name, r.verdict, r.message) for r in report.results] == [
        ("cluster-reachable", "pass", "reached https://fake.invalid (Kubernetes v1.33.1), credentials accepted"),
        ("common", "fail", "not installed: kfctl has no record of this platform on the cluster"),
        ("training-operator", "fail", "not installed: kfctl has no record of this platform on the cluster"),
        ("tfjob", "fail", "the cluster does not serve TFJob (kubeflow.org/v1): is training-operator installed?"),
        (
            "pytorchjob",
            "fail",
            "the cluster does not serve PyTorchJob (kubeflow.org/v1): is training-operator installed?",
        ),
    ]


LABEL = "katib.kubeflow.org/metrics-collector-injection"


@pytest.mark.parametrize(
    ("namespaces", "expected"),
    [
        pytest.param(
            {},
            (
                "warn",
                f"no namespace is labelled {LABEL}=enabled: katib's webhook accepts Experiment objects only in such a "
                "namespace, so nobody can create one yet",
                f"label the namespace(s) your users work in: kubectl label namespace NAMESPACE {LABEL}=enabled",
            ),
            id="no-labelled-namespace",
        ),
        pytest.param(
            {"team-b": "enabled", "team-a": "enabled", "kubeflow": "disabled"},
            (
                "pass",
                "the API server and its admission webhooks accept a new Experiment in team-a (server-side dry run, "
                "nothing stored)",
                "",
            ),
            id="the-first-labelled-namespace",
        ),
    ],
)
def test_an_experiment_is_probed_where_katib_accepts_one(
    namespaces: dict[str, str], expected: tuple[str, str, str]
) -> None:
    c = cluster()
    c.put(served_crd("kubeflow.org", "Experiment", "experiments"))
    for name, value in namespaces.items():
        c.put(obj("v1", "Namespace", name, labels={LABEL: value}))
    ctx = InstalledContext(
        cluster=c, health=lambda: {"katib": ready("ok")}, namespaces={"katib": "kubeflow"}, suffix="t"
    )
    report = run_checks(installed_checks(["katib"], {"katib"}), ctx)
    assert verdict(report, "experiment") == expected
