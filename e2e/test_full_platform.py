"""Upstream Kubeflow's full platform (kubeflow/manifests v1.11.0, example/): scaffolded by `kfctl init --upstream`,
generated offline, installed healthy on a fresh local cluster, re-applied without a write, deleted clean.

The release and the remote bases it fetches come from a mirror on 127.0.0.1 (kfctl_testbed.upstream_mirror:
upstream's own sources from ../shared/fixtures behind a real git server and an HTTP server), reached through
`--mirror` as a user behind one would; GitHub is out of reach (a dead proxy).

What runs: the real operators the process runtime has a binary for, at the release's own versions (katib v0.19.0,
KServe v0.15.2, Trainer v2.1.0 and its JobSet v0.10.1, the Spark operator v2.4.0, Knative Serving's controller,
webhook, autoscaler and activator (v0.43.1 standing in for 1.16.2), and kubeflow/kubeflow v1.10.0's profile
controller, KFAM, notebook controller and PodDefault webhook built from ../shared/fixtures' source, its central
dashboard and Jupyter, volumes and TensorBoards web apps (e2e/build-binaries --webapps; e2e/test_web_uis.py shows them
answer), and oauth2-proxy v7.15.6 standing in for v7.13.0); kwok plays every other pod.
Upstream's own test objects and scripts (the release's tests/) run against it as they run in upstream's CI.
Webhooks whose server cannot be built here are played by the stand-in controller (kfctl_testbed.standin), which says so
below: it admits unchanged (never injects a sidecar) and writes the caBundle as the server would for itself at start.

The oracles are the API server's: every object's health as kfctl reads it is checked again by `kfctl status`, the
writes by the audit of the run's own counts (0 created, 0 configured on a re-apply), and what is left after delete
by listing every listable kind with kfctl's label, and the namespaces.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import Run, kfctl, kubectl
from full_platform_support import (
    USER_NS,
    labelled,
    no_network,
    not_our_kubeconfig,
    played_webhooks,
    runs_for_real,
    served,
    unpack_release,
)
from harness import Cluster, poll
from kfctl_testbed import localcluster, upstream_mirror
from runtime_support import http_status_in_netns, runtime_pid

from kfctl import yamlio

pytestmark = pytest.mark.e2e

NAME = "kubeflow"
PROFILE_LABELS = "applications/profiles/upstream/base/namespace-labels.yaml"
PODDEFAULT = "poddefaults.access-ml-pipeline.kubeflow-user-example-com.yaml"
NOTEBOOK = "notebook.test.kubeflow-user-example.com.yaml"
# Upstream's trainer test waits for the training pod to be Ready 15 s after it applied the TrainJob: kwok lets a
# simulated training pod run this long (e2e/cluster up --training-seconds).
CLUSTER_UP_ARGS = ("--training-seconds", "60")


@dataclass
class Platform:
    kubeconfig: str
    state_dir: Path | None
    app: Path
    applications: list[str]
    waves: int
    apply: Run


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror) -> Path:
    """The release's tree (its tests/ and the files the oracles read), never copied into the repository."""
    return unpack_release("v1.11.0", tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Platform:
    kubeconfig = module_cluster.kubeconfig
    app = tmp_path_factory.mktemp("full") / NAME
    with served(release_mirror) as flags:
        init = kfctl("init", str(app), "--upstream", "v1.11.0", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    # The mirror is gone: from here on nothing but the cache and the lock.
    with no_network():
        offline = kfctl("generate", str(app), "--offline", kubeconfig=kubeconfig)
    assert offline.code == 0, offline.explain()
    assert json.loads(offline.stdout)["changed"] == []
    plan = kfctl("plan", str(app), kubeconfig=kubeconfig)
    assert plan.code == 0, plan.explain()
    # Upstream's own RBAC lets KServe's controller watch InferenceServices: it starts once that CRD is served.
    steps = {st["step"]: st for wave in json.loads(plan.stdout)["waves"] for st in wave}
    kserve = steps["Deployment.apps kubeflow/kserve-controller-manager"]["dependsOn"]
    assert ("CustomResourceDefinition.apiextensions.k8s.io inferenceservices.serving.kserve.io", "operand-crd") in {
        (d["step"], d["rule"]) for d in kserve
    }, kserve

    print("\nwebhooks the stand-in plays (their servers cannot be built here):", *played_webhooks(), sep="\n  ")
    run = kfctl("apply", str(app), "--wait-timeout", "10m", kubeconfig=kubeconfig, timeout=1500)
    assert run.code == 0, run.explain()
    return Platform(
        kubeconfig,
        module_cluster.state_dir,
        app,
        json.loads(init.stdout)["applications"],
        json.loads(plan.stdout)["summary"]["waves"],
        run,
    )


def test_v1_11_full_platform_installs_healthy_from_an_offline_render(platform: Platform) -> None:
    s = platform.apply.summary
    path = " → ".join(f"{c['step']} {c['seconds']}s" for c in s["criticalPath"])
    print(
        f"\napply: {s['objects']} objects in {len(platform.applications)} applications, {platform.waves} waves, "
        f"{s['seconds']} s; critical path: {path}"
    )
    assert [a["name"] for a in s["applications"]] == platform.applications
    assert all(a["state"] == "ready" for a in s["applications"]), s["applications"]
    assert s["created"] + s["unchanged"] == s["objects"]
    status = kfctl("status", str(platform.app), kubeconfig=platform.kubeconfig)
    assert status.code == 0, status.explain()


def test_the_real_profile_controller_gives_the_user_profile_its_namespace(platform: Platform, release: Path) -> None:
    """The example's Profile (common/user-namespace) is served by the real profile controller v1.10.0: its
    namespace gets the labels upstream's namespace-labels.yaml names, the owner's RoleBinding and the two
    ServiceAccounts every notebook and pipeline run uses."""
    print(
        "profile controller:",
        runs_for_real(platform.kubeconfig, platform.state_dir, "kubeflow", "profiles-deployment", "manager"),
    )
    wanted = yaml.safe_load((release / PROFILE_LABELS).read_text())

    def namespace() -> dict[str, Any] | None:
        text = kubectl(platform.kubeconfig, "get", "namespace", USER_NS, "-o", "json", check=False)
        labels = json.loads(text)["metadata"].get("labels", {}) if text else {}
        return labels if all(labels.get(k) == v for k, v in wanted.items()) else None

    labels = poll(namespace, timeout=120, what=f"namespace {USER_NS} with the labels of {PROFILE_LABELS}")
    print(f"namespace {USER_NS}: " + ", ".join(f"{k}={labels[k]}" for k in sorted(wanted)))
    binding = json.loads(
        kubectl(platform.kubeconfig, "get", "rolebinding", "namespaceAdmin", "-n", USER_NS, "-o", "json")
    )
    assert binding["roleRef"]["name"] == "kubeflow-admin"
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("User", "user@example.com")]
    accounts = kubectl(platform.kubeconfig, "get", "serviceaccounts", "-n", USER_NS, "-o", "name").split()
    assert {"serviceaccount/default-editor", "serviceaccount/default-viewer"} <= set(accounts), accounts


def test_a_notebook_gets_its_statefulset_and_its_pod_the_poddefault(platform: Platform, release: Path) -> None:
    """Upstream's own test objects (tests/): a PodDefault, then a Notebook that selects it. The real notebook
    controller makes the StatefulSet, the real controller manager its pod, and the real PodDefault webhook
    (failurePolicy Fail) puts the PodDefault's env and volume into that pod."""
    print(
        "notebook controller:",
        runs_for_real(platform.kubeconfig, platform.state_dir, "kubeflow", "notebook-controller-deployment", "manager"),
    )
    print(
        "poddefaults webhook:",
        runs_for_real(
            platform.kubeconfig, platform.state_dir, "kubeflow", "admission-webhook-deployment", "admission-webhook"
        ),
    )
    for name in (PODDEFAULT, NOTEBOOK):
        kubectl(platform.kubeconfig, "apply", "-f", str(release / "tests" / name))
    poll(
        lambda: kubectl(platform.kubeconfig, "get", "statefulset", "test", "-n", USER_NS, "-o", "name", check=False),
        timeout=120,
        what="the notebook controller to create StatefulSet test",
    )
    pod = poll(
        lambda: json.loads(kubectl(platform.kubeconfig, "get", "pod", "test-0", "-n", USER_NS, "-o", "json")),
        timeout=120,
        what="pod test-0 of the notebook",
    )
    [container] = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env.get("KF_PIPELINES_SA_TOKEN_PATH") == "/var/run/secrets/kubeflow/pipelines/token", env
    assert "volume-kf-pipeline-token" in {v["name"] for v in pod["spec"]["volumes"]}
    assert "poddefault.admission.kubeflow.org/poddefault-access-ml-pipeline" in pod["metadata"]["annotations"]


SPARK_EXAMPLE = "applications/spark/sparkapplication_example.yaml"


def kubectl_run(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl's own answer, refusals included (apply_support.kubectl fails the test on one)."""
    return subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_real_spark_operator_makes_its_certificate_validates_and_takes_up_a_sparkapplication(
    platform: Platform, release: Path
) -> None:
    """The Spark operator v2.4.0 runs for real, controller and webhook (one binary, as upstream's image): the webhook
    made its own certificate Secret at start and wrote its CA into the caBundle of its webhook configurations (no
    cert-manager, no stand-in). The release's example SparkApplication passes its mutating and validating webhooks
    (failurePolicy Fail); one the validator must refuse is refused with the validator's own message; the
    controller takes the example up and writes its state. Spark itself cannot run here: the controller submits
    through spark-submit, a JVM program of the Spark image, so the submission fails and the state says why;
    upstream's tests/spark_test.sh, which waits for the driver pod to run, is not run."""
    for deployment, container in (
        ("spark-operator-controller", "spark-operator-controller"),
        ("spark-operator-webhook", "spark-operator-webhook"),
    ):
        print(
            f"{deployment}:", runs_for_real(platform.kubeconfig, platform.state_dir, "kubeflow", deployment, container)
        )
    secret = json.loads(
        kubectl(platform.kubeconfig, "get", "secret", "spark-operator-webhook-certs", "-n", "kubeflow", "-o", "json")
    )
    ca = base64.b64decode(secret["data"]["ca-cert.pem"])
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        config = json.loads(kubectl(platform.kubeconfig, "get", kind, "spark-operator-webhook", "-o", "json"))
        bundles = {base64.b64decode(w["clientConfig"]["caBundle"]) for w in config["webhooks"]}
        assert bundles == {ca}, f"{kind} spark-operator-webhook: caBundle is not the CA of the webhook's own Secret"

    example = yaml.safe_load((release / SPARK_EXAMPLE).read_text())
    refused = {**example, "metadata": {"name": "spark-refused"}}
    refused["spec"] = {**example["spec"], "nodeSelector": {"disk": "ssd"}}
    refused["spec"]["driver"] = {**example["spec"]["driver"], "nodeSelector": {"disk": "ssd"}}
    create = kubectl_run(platform.kubeconfig, "create", "-n", USER_NS, "-f", "-", stdin=yaml.safe_dump(refused))
    assert create.returncode == 1, create.stdout + create.stderr
    assert "node selector cannot be defined at both SparkApplication and Driver/Executor" in create.stderr, (
        create.stderr
    )
    print("refused by the webhook:", create.stderr.strip())

    kubectl(platform.kubeconfig, "apply", "-n", USER_NS, "-f", str(release / SPARK_EXAMPLE))

    def taken_up() -> dict[str, Any] | None:
        app = json.loads(
            kubectl(platform.kubeconfig, "get", "sparkapplication", "spark-pi-python", "-n", USER_NS, "-o", "json")
        )
        state = (app.get("status") or {}).get("applicationState") or {}
        return state if state.get("state") in ("SUBMISSION_FAILED", "FAILED") else None

    state = poll(taken_up, timeout=120, what="the Spark operator to take up SparkApplication spark-pi-python")
    assert "spark-submit" in state.get("errorMessage", ""), state
    print(f"spark-pi-python: {state['state']} (no Spark here): {state['errorMessage'][:200]}")
    kubectl(platform.kubeconfig, "delete", "sparkapplication", "spark-pi-python", "-n", USER_NS, "--wait=true")


KNATIVE = "knative-serving"
KNATIVE_WEBHOOKS = (
    ("mutatingwebhookconfiguration", "webhook.serving.knative.dev"),
    ("validatingwebhookconfiguration", "validation.webhook.serving.knative.dev"),
    ("validatingwebhookconfiguration", "config.webhook.serving.knative.dev"),
)


def knative_service(name: str, containers: list[dict[str, Any]]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": USER_NS},
            "spec": {"template": {"spec": {"containers": containers}}},
        }
    )


def test_real_knative_serving_makes_its_certificate_validates_and_reconciles_a_service(
    platform: Platform, release: Path
) -> None:
    """Knative Serving's controller, webhook and autoscaler run for real (v0.43.1, Knative 1.16.1, standing in for the
    1.16.2 the release pins by digest: the module proxy refuses v0.43.2), and the activator (its own test). The
    webhook made its own certificate in the release's empty Secret webhook-certs and wrote that CA into its three
    webhook configurations (no stand-in). A Service without a container is refused by the validating webhook's own
    message; a valid one is defaulted by the mutating webhook (the traffic block we did not send), and the real
    controller makes its
    Configuration, its first Revision and the Revision's Deployment with the queue-proxy sidecar the release's
    config-deployment names. net-istio cannot be built here (its module is refused), so the Route never gets an
    ingress and nothing is served: the test stops at the Deployment. The image is under dev.local, a registry
    Knative never resolves (its default registries-skipping-tag-resolving), so nothing dials out."""
    for deployment in ("controller", "webhook", "autoscaler"):
        print(
            f"{KNATIVE}/{deployment}:",
            runs_for_real(platform.kubeconfig, platform.state_dir, KNATIVE, deployment, deployment),
        )
    secret = json.loads(kubectl(platform.kubeconfig, "get", "secret", "webhook-certs", "-n", KNATIVE, "-o", "json"))
    ca = base64.b64decode(secret["data"]["ca-cert.pem"])
    for kind, name in KNATIVE_WEBHOOKS:
        config = json.loads(kubectl(platform.kubeconfig, "get", kind, name, "-o", "json"))
        bundles = {base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in config["webhooks"]}
        assert bundles == {ca}, f"{kind} {name}: caBundle is not the CA of Knative's own Secret webhook-certs"

    create = kubectl_run(platform.kubeconfig, "create", "-f", "-", stdin=knative_service("knative-refused", []))
    assert create.returncode == 1, create.stdout + create.stderr
    assert 'admission webhook "validation.webhook.serving.knative.dev" denied the request' in create.stderr, (
        create.stderr
    )
    assert "spec.template.spec.containers" in create.stderr, create.stderr
    print("refused by Knative's webhook:", create.stderr.strip())

    name = "hello"
    created = kubectl_run(
        platform.kubeconfig, "create", "-f", "-", stdin=knative_service(name, [{"image": "dev.local/hello:v1"}])
    )
    assert created.returncode == 0, created.stderr
    try:
        stored = json.loads(kubectl(platform.kubeconfig, "get", "ksvc", name, "-n", USER_NS, "-o", "json"))
        assert stored["spec"]["traffic"] == [{"latestRevision": True, "percent": 100}], stored["spec"]

        def revision_deployment() -> dict[str, Any] | None:
            found = kubectl_run(
                platform.kubeconfig, "get", "deployment", f"{name}-00001-deployment", "-n", USER_NS, "-o", "json"
            )
            return json.loads(found.stdout) if found.returncode == 0 else None

        deployment = poll(
            revision_deployment, timeout=120, what=f"Knative's controller to deploy Revision {name}-00001"
        )
        containers = {c["name"]: c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
        release_config = {
            d["metadata"]["name"]: d
            for d in yamlio.safe_load_all(
                (release / "common/knative/knative-serving/base/upstream/serving-core.yaml").read_text()
            )
            if d and d.get("kind") == "ConfigMap"
        }
        queue = release_config["config-deployment"]["data"]["queue-sidecar-image"]
        assert containers == {"user-container": "dev.local/hello:v1", "queue-proxy": queue}, containers
        owners = [o["kind"] for o in deployment["metadata"].get("ownerReferences", [])]
        assert owners == ["Revision"], owners
        configuration = json.loads(
            kubectl(platform.kubeconfig, "get", "configuration", name, "-n", USER_NS, "-o", "json")
        )
        assert [o["kind"] for o in configuration["metadata"]["ownerReferences"]] == ["Service"]
        print(f"ksvc {name}: Configuration, Revision {name}-00001 and its Deployment ({', '.join(containers)})")
    finally:
        kubectl(platform.kubeconfig, "delete", "ksvc", name, "-n", USER_NS, "--wait=true")


def test_knatives_activator_runs_for_real_and_is_ready_from_its_own_probe(platform: Platform) -> None:
    """Knative's activator (v0.43.1 standing in for 1.16.2, like the rest of Knative Serving) is Ready only once its
    websocket to the autoscaler's Service is up (its HealthHandler answers the kubelet's probe with the stat sink's
    status): it reaches `autoscaler.knative-serving.svc.cluster.local:8080` through the cluster DNS and Service
    proxy the runtime gives its pods (kfctl_testbed/podnet.py). The pod's Ready is the runtime's reading of the
    activator's own readinessProbe (GET :8012 as the kubelet sends it), which the test sends again itself."""
    assert platform.state_dir is not None
    print(
        f"{KNATIVE}/activator:",
        runs_for_real(platform.kubeconfig, platform.state_dir, KNATIVE, "activator", "activator"),
    )
    pods = json.loads(kubectl(platform.kubeconfig, "get", "pods", "-n", KNATIVE, "-l", "app=activator", "-o", "json"))
    [pod] = pods["items"]
    conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
    assert conditions.get("Ready") == "True", pod["status"]
    [status] = pod["status"]["containerStatuses"]
    assert status["ready"] and "running" in status["state"], status
    log = localcluster.runtime_dir(platform.state_dir) / f"{KNATIVE}_{pod['metadata']['name']}_activator.log"
    pid = runtime_pid(log.read_text(errors="replace"))
    probe = pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]
    kubelet = {"User-Agent": "kube-probe/1.33", "Accept": "*/*"}
    assert http_status_in_netns(pid, probe["port"], probe.get("path", "/"), kubelet) == 200
    print(f"activator pod {pod['metadata']['name']}: Ready; its probe GET :{probe['port']} answers 200")


def test_kfctl_check_smoke_probes_every_kind_it_can_sample_and_runs_a_trainjob(platform: Platform) -> None:
    """`kfctl check --smoke` on a platform of upstream's trees (no catalog component): the probes follow the kinds
    the cluster serves. Each dry run goes through the real webhooks (Trainer's, KServe's, Katib's, the PodDefault
    webhook, the notebook controller has none) or the stand-in's; the TrainJob runs to Complete on the real
    Trainer and JobSet, in a Profile's namespace the real profile controller took over. The login and dashboard
    checks (category dashboard: the platform has an Istio Gateway) log in through the gateway and Dex stand-ins,
    the real oauth2-proxy and central dashboard."""
    run = kfctl("check", str(platform.app), "--smoke", kubeconfig=platform.kubeconfig, timeout=900)
    assert run.code == 0, run.explain()
    checks = {c["name"]: c for c in json.loads(run.stdout)["checks"]}
    login = {n: c["verdict"] for n, c in checks.items() if c["category"] == "dashboard"}
    assert login == {"login": "pass", "dashboard": "pass"}, checks
    probed = [n for n, c in checks.items() if c["category"] not in ("cluster", "health", "dashboard")]
    assert probed == [
        "certificate",
        "trainjob",
        "experiment",
        "inferenceservice",
        "notebook",
        "profile",
        "poddefault",
        "sparkapplication",
        "smoke-trainjob",
    ], checks
    # The real profile controller took the smoke job's Profile: the TrainJob ran in a user's namespace.
    assert re.fullmatch(
        r"TrainJob (kfctl-smoke-[0-9a-f]{8}-trainjob) ran to Complete in \d+s in Profile \1's namespace; both are "
        r"deleted",
        checks["smoke-trainjob"]["message"],
    ), checks
    print("\nkfctl check --smoke:", *(f"{n}: {checks[n]['message']}" for n in [*login, *probed]), sep="\n  ")


def upstream_script(platform: Platform, release: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One of upstream's test scripts, run as its CI runs it: from the release's root, kubectl on PATH."""
    env = {**os.environ, "KUBECONFIG": platform.kubeconfig}
    return subprocess.run(
        ["bash", *args], cwd=release, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_upstreams_trainer_test_then_pss_enable_restricted_pass(platform: Platform, release: Path) -> None:
    """tests/trainer_test.sh runs its TrainJob on the real Trainer v2.1.0 and JobSet v0.10.1 to a complete Job
    (kwok plays the training pod for 60 s: CLUSTER_UP_ARGS); then tests/PSS_enable.sh restricted labels the
    platform's namespaces, and fails on a pod that would violate it."""
    trainer = upstream_script(platform, release, "tests/trainer_test.sh")
    assert trainer.returncode == 0, trainer.stdout[-3000:] + trainer.stderr[-3000:]
    print("tests/trainer_test.sh:", trainer.stdout.strip().splitlines()[-1])
    pss = upstream_script(platform, release, "tests/PSS_enable.sh", "restricted")
    assert pss.returncode == 0, pss.stdout[-3000:] + pss.stderr[-3000:]
    print("tests/PSS_enable.sh restricted:", " ".join(pss.stdout.split()))


def test_a_reapply_writes_nothing_and_delete_leaves_nothing(platform: Platform) -> None:
    """After the user's objects above (Profile namespace, Notebook, TrainJob), a re-apply writes nothing and
    prunes nothing; delete removes every labelled object and every namespace of the install."""
    kubeconfig = platform.kubeconfig
    again = kfctl("apply", str(platform.app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert again.code == 0, again.explain()
    assert (again.summary["created"], again.summary["configured"], again.summary["corrected"]) == (0, 0, 0)
    assert again.summary["pruned"] == 0
    print(f"\nre-apply: {again.summary['unchanged']} unchanged, 0 writes, {again.summary['seconds']} s")

    namespaces = {o.split("/", 1)[1] for o in labelled(kubeconfig, NAME) if o.startswith("namespace/")}
    gone = kfctl(
        "delete", str(platform.app), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900
    )
    assert gone.code == 0, gone.explain()
    assert labelled(kubeconfig, NAME) == []
    left = set(kubectl(kubeconfig, "get", "namespaces", "-o", "name").split())
    assert not {f"namespace/{n}" for n in namespaces} & left, sorted(left)
    assert not_our_kubeconfig(kubeconfig)  # a cluster of its own: nothing else was touched
