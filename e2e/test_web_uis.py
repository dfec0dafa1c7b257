"""The web UIs of upstream Kubeflow v1.11.0 run for real: the central dashboard, the Jupyter, volumes and TensorBoards
web apps (kubeflow/kubeflow v1.10.0, built by `e2e/build-binaries --webapps` from ../shared/fixtures' source with npm
and pip) and oauth2-proxy (v7.15.6 standing in for v7.13.0, which the Go module proxy refuses), installed by kfctl from
the release's own applications and run by the test bed's process runtime with their pods' args and env.

Only the applications these need, of `kfctl init --upstream v1.11.0`'s 29 (the rest of the full platform is
e2e/test_full_platform.py's): Istio's CRDs and namespace (the apps' VirtualServices and AuthorizationPolicies), the
kubeflow namespace, roles and gateway, oauth2-proxy, the dashboard, the three web apps, and profiles + KFAM with the
example's Profile (the user the apps are asked for).

The oracles: each pod Ready from the runtime's readiness (its own readinessProbe, where it has one: oauth2-proxy's
/ready), the process's log, and what each app answers through the API server's proxy to its Service (loopback; the
runtime's egress proxy leads to 127.0.0.1:<targetPort> in the pod's network namespace), compared with what the API
server holds: the dashboard's links are its ConfigMap's, the Jupyter web app's form config its ConfigMap's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import kfctl, kubectl
from full_platform_support import USER_NS, runs_for_real, served
from harness import Cluster, poll
from kfctl_testbed import kube_rest, runtime, upstream_mirror
from kfctl_testbed.gobuild.cachekeys import cache_root
from kfctl_testbed.gobuild.recipes import Selection
from kfctl_testbed.gobuild.run import dirs
from kfctl_testbed.gobuild.versions import Versions

pytestmark = pytest.mark.e2e

NAME = "webuis"
USER = "user@example.com"  # the example Profile's owner (common/user-namespace)
# Of the 29 applications `kfctl init --upstream v1.11.0` writes, the ones the web UIs need.
APPLICATIONS = (
    "istio-crds",
    "istio-namespace",
    "oauth2-proxy-m2m-dex-only",
    "kubeflow-namespace",
    "kubeflow-roles",
    "istio-kubeflow-istio-resources",
    "centraldashboard-oauth2-proxy",
    "jupyter-web-app-istio",
    "volumes-web-app-istio",
    "tensorboard-tensorboards-web-app-istio",
    "profiles-pss",
    "user-namespace",
)


@dataclass(frozen=True)
class Ui:
    namespace: str
    deployment: str
    container: str
    image: str  # as v1.11.0 pins it


UIS = {
    "dashboard": Ui(
        "kubeflow", "centraldashboard", "centraldashboard", "ghcr.io/kubeflow/kubeflow/central-dashboard:v1.10.0"
    ),
    "jupyter": Ui(
        "kubeflow", "jupyter-web-app-deployment", "jupyter-web-app", "ghcr.io/kubeflow/kubeflow/jupyter-web-app:v1.10.0"
    ),
    "volumes": Ui(
        "kubeflow", "volumes-web-app-deployment", "volumes-web-app", "ghcr.io/kubeflow/kubeflow/volumes-web-app:v1.10.0"
    ),
    "tensorboards": Ui(
        "kubeflow",
        "tensorboards-web-app-deployment",
        "tensorboards-web-app",
        "ghcr.io/kubeflow/kubeflow/tensorboards-web-app:v1.10.0",
    ),
    "oauth2-proxy": Ui("oauth2-proxy", "oauth2-proxy", "oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.13.0"),
}


@dataclass
class Installed:
    cluster: Cluster
    app: Path
    api: kube_rest.Client


def built_launchers() -> list[str]:
    """What the runtime needs and `make setup` (e2e/build-binaries --operators --webapps) builds, missing ones."""
    versions = Versions.load()
    bin_dir = dirs(versions, Selection(operators=True), root=cache_root()).operators
    assert bin_dir is not None
    return [ui.image for ui in UIS.values() if runtime.binary_for(ui.image, bin_dir) is None]


@pytest.fixture(scope="module")
def installed(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Any:
    missing = built_launchers()
    assert not missing, f"no process built for {', '.join(missing)}: run `make setup` (e2e/build-binaries --webapps)"
    kubeconfig = module_cluster.kubeconfig
    app = tmp_path_factory.mktemp("webuis") / NAME
    with served(release_mirror) as flags:
        init = kfctl("init", str(app), "--upstream", "v1.11.0", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        kfdef = app / "kfdef.yaml"
        doc = yaml.safe_load(kfdef.read_text())
        names = [a["name"] for a in doc["spec"]["applications"]]
        assert set(APPLICATIONS) <= set(names), sorted(set(APPLICATIONS) - set(names))
        doc["spec"]["applications"] = [a for a in doc["spec"]["applications"] if a["name"] in APPLICATIONS]
        kfdef.write_text(yaml.safe_dump(doc, sort_keys=False))
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert run.code == 0, run.explain()
    api = kube_rest.Client(kubeconfig)
    yield Installed(module_cluster, app, api)
    api.close()


def pod_of(kubeconfig: str, ui: Ui) -> dict[str, Any]:
    pods = json.loads(kubectl(kubeconfig, "get", "pods", "-n", ui.namespace, "-o", "json"))["items"]
    [pod, *_] = [p for p in pods if p["metadata"]["name"].startswith(ui.deployment + "-")]
    return pod  # type: ignore[no-any-return]


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def through_service(api: kube_rest.Client, namespace: str, service: str, path: str, **headers: str) -> tuple[int, str]:
    """GET <path> of a Service through the API server's proxy (the runtime's egress proxy dials the pod's process).
    A pod without a readinessProbe is Ready once its process runs, which may be before it listens (the dashboard
    loads for seconds): until the process answers, the proxy's 502/503 are waited out (120 s)."""
    url = f"/api/v1/namespaces/{namespace}/services/{service}/proxy{path}"

    def answered() -> tuple[int, str] | None:
        status, body = api.send("GET", url, headers=headers)
        return None if status in (502, 503) else (status, body.decode(errors="replace"))

    return poll(answered, timeout=120, what=f"an answer of {namespace}/{service} to GET {path}", interval=1)


@pytest.mark.parametrize("which", list(UIS))
def test_each_ui_runs_its_own_process_and_is_ready(installed: Installed, which: str) -> None:
    """Its pod (of the image v1.11.0 pins) is Ready: the runtime runs its process (a launcher of the built app, or the
    Go binary) and the pod's own readinessProbe passes."""
    ui = UIS[which]
    kubeconfig = installed.cluster.kubeconfig
    pod = pod_of(kubeconfig, ui)
    [container] = [c for c in pod["spec"]["containers"] if c["name"] == ui.container]
    assert container["image"] == ui.image
    probe = container.get("readinessProbe")
    print(
        f"\n{which}: {ui.image} runs {runtime.binary_name(ui.image)}; readinessProbe: {probe and probe.get('httpGet')}"
    )
    if ui.image.endswith(":v7.13.0"):
        print("STAND-IN: oauth2-proxy v7.15.6 runs for v7.13.0 (the Go module proxy refuses v7.13.0)")
    assert ready(pod), pod.get("status")
    print(
        "  log:",
        runs_for_real(kubeconfig, installed.cluster.state_dir, ui.namespace, ui.deployment + "-", ui.container),
    )


def test_the_dashboard_serves_the_links_of_its_configmap(installed: Installed) -> None:
    """`GET /api/dashboard-links`: the dashboard reads ConfigMap centraldashboard-config through the API server and
    answers its `links`, as the real one does."""
    cm = json.loads(
        kubectl(
            installed.cluster.kubeconfig, "get", "configmap", "centraldashboard-config", "-n", "kubeflow", "-o", "json"
        )
    )
    status, body = through_service(installed.api, "kubeflow", "centraldashboard:80", "/api/dashboard-links")
    assert status == 200, body
    assert json.loads(body) == json.loads(cm["data"]["links"])
    status, body = through_service(installed.api, "kubeflow", "centraldashboard:80", "/healthz")
    assert (status, json.loads(body)["codeEnvironment"]) == (200, "production"), body


def test_the_jupyter_web_app_serves_its_spawner_config(installed: Installed) -> None:
    """`GET /api/config` as the user (the kubeflow-userid header the gateway sets): the form's defaults of the
    ConfigMap the app mounts at /etc/config; without the header, 401 as the real app answers."""
    pod = pod_of(installed.cluster.kubeconfig, UIS["jupyter"])
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == "config-volume"]
    cm = json.loads(
        kubectl(
            installed.cluster.kubeconfig,
            "get",
            "configmap",
            volume["configMap"]["name"],
            "-n",
            "kubeflow",
            "-o",
            "json",
        )
    )
    wanted = yaml.safe_load(cm["data"]["spawner_ui_config.yaml"])["spawnerFormDefaults"]
    service = "jupyter-web-app-service:80"
    status, body = through_service(installed.api, "kubeflow", service, "/api/config", **{"kubeflow-userid": USER})
    assert status == 200, body
    assert json.loads(body)["config"] == wanted
    status, body = through_service(installed.api, "kubeflow", service, "/api/config")
    assert status == 401, body
    # its Angular frontend (built by --webapps), under the base href the gateway serves it at
    status, body = through_service(installed.api, "kubeflow", service, "/", **{"kubeflow-userid": USER})
    assert status == 200, body
    # (the API server's proxy rewrites the page's links under its own path: <base href=".../proxy/jupyter/">)
    assert "<title>Jupyter Management UI</title>" in body and re.search(r'<base href="[^"]*/jupyter/">', body), body[
        :500
    ]
    assert re.search(r'<script src="static/main\.[0-9a-f]+\.js"', body), body[-500:]


def test_oauth2_proxy_answers_its_ping(installed: Installed) -> None:
    status, body = through_service(installed.api, "oauth2-proxy", "oauth2-proxy:80", "/ping")
    assert (status, body.strip()) == (200, "OK")


STRANGER = "stranger@example.com"  # no RoleBinding anywhere


@pytest.mark.parametrize(
    ("which", "service", "user", "status", "answer"),
    [
        pytest.param(
            "tensorboards", "tensorboards-web-app-service:80", USER, 200, {"pvcs": []}, id="tensorboards-owner"
        ),
        pytest.param(
            "tensorboards", "tensorboards-web-app-service:80", STRANGER, 403, None, id="tensorboards-stranger"
        ),
        pytest.param("volumes", "volumes-web-app-service:80", STRANGER, 403, None, id="volumes-stranger"),
    ],
)
def test_a_crud_app_asks_the_api_server_whether_the_user_may_list_pvcs(
    installed: Installed, which: str, service: str, user: str, status: int, answer: dict[str, Any] | None
) -> None:
    """`GET /api/namespaces/<the Profile's namespace>/pvcs`: the app's SubjectAccessReview for the user decides (the
    owner's RoleBinding is the real profile controller's); the owner gets the namespace's PVCs (none), a stranger the
    app's own 403 message."""
    path = f"/api/namespaces/{USER_NS}/pvcs"
    got, body = through_service(installed.api, "kubeflow", service, path, **{"kubeflow-userid": user})
    assert got == status, body
    doc = json.loads(body)
    if answer is not None:
        assert {k: doc[k] for k in answer} == answer
    else:
        assert (
            doc["log"] == f"User '{user}' is not authorized to list v1/persistentvolumeclaims in namespace '{USER_NS}'"
        )


def test_the_dashboard_asks_kfam_for_the_users_namespaces(installed: Installed) -> None:
    """`GET /api/workgroup/env-info`: the dashboard reaches KFAM at PROFILES_KFAM_SERVICE_HOST (profiles-kfam.kubeflow,
    by the runtime's pod DNS and Service routing) and answers the namespaces the user's RoleBindings give (the real
    profile controller's `namespaceAdmin`, annotated role admin: the dashboard's `owner`); a user without a profile
    gets none (the dashboard then offers registration)."""
    binding = json.loads(
        kubectl(installed.cluster.kubeconfig, "get", "rolebinding", "namespaceAdmin", "-n", USER_NS, "-o", "json")
    )
    assert binding["metadata"]["annotations"] == {"role": "admin", "user": USER}, binding["metadata"]
    service = "centraldashboard:80"
    status, body = through_service(
        installed.api, "kubeflow", service, "/api/workgroup/env-info", **{"kubeflow-userid": USER}
    )
    assert status == 200, body
    env = json.loads(body)
    assert (env["user"], env["namespaces"]) == (USER, [{"user": USER, "namespace": USER_NS, "role": "owner"}]), env
    status, body = through_service(
        installed.api, "kubeflow", service, "/api/workgroup/env-info", **{"kubeflow-userid": STRANGER}
    )
    assert status == 200, body
    assert json.loads(body)["namespaces"] == [], body
