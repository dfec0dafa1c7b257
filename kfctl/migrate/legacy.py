"""What became of each kfctl v1.0 to v1.2 application: its catalog successor, or why it has none.

Data only, read by :mod:`kfctl.migrate.migrate`. The keys are the package paths of kubeflow/manifests
v1.0 to v1.2 (the repo every official v1 KfDef pointed at; ``../shared/fixtures`` holds the v1.2.0 release)
and the application names of the official KfDefs (``kfdef/kfctl_*.v1.*.yaml`` in that repo). A reason says
in one line what the package did and why nothing here replaces it; it is printed as written, so keep it
factual and short. Nothing in this module reads files or knows about the output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Successor:
    """The catalog components that took over a v1 package."""

    components: tuple[str, ...]
    note: str = ""  # what the successor does not do that the v1 package did


@dataclass(frozen=True)
class NoSuccessor:
    reason: str


Outcome = Successor | NoSuccessor

TRAINING = Successor(("training-operator",))
PIPELINES = Successor(("pipelines",))
NOTEBOOKS = Successor(("notebook-controller",))
JUPYTER_UI = Successor(
    ("notebook-controller",), "the Jupyter web app (UI) is not in the catalog: create Notebook resources directly"
)
CERT_MANAGER = Successor(("cert-manager",))
KSERVE = Successor(
    ("kserve",),
    "KFServing's new name since v0.7 (API group serving.kserve.io, was serving.kubeflow.org); in RawDeployment "
    "mode, without Knative or Istio",
)
MXNET = NoSuccessor("MXNet jobs: removed upstream (training-operator v1.9.0 dropped MXJob; Apache MXNet is retired)")
ISTIO = NoSuccessor(
    "a service mesh, not in the catalog (its kserve runs without one); install Istio with istioctl or its Helm "
    "charts if you use it"
)
CLUSTER_LOCAL_GATEWAY = NoSuccessor("an Istio gateway for Knative's cluster-local traffic; neither is in the catalog")
ANONYMOUS_USER = NoSuccessor(
    "an Istio EnvoyFilter that set header kubeflow-userid to anonymous@kubeflow.org; Istio and multi-user login "
    "are not in the catalog"
)
AUTH = NoSuccessor("authentication (login in front of Istio's ingress); not part of the catalog")
APPLICATION = NoSuccessor(
    "the Kubernetes Application controller and CRD (app.k8s.io), removed upstream; kfctl tracks what it "
    "installs with its own inventory"
)
PROFILES = NoSuccessor("multi-user profiles (Profile resources, a namespace per user); the catalog is single-user")
DASHBOARD = NoSuccessor("the Kubeflow central dashboard (web UI); not in the catalog")
PODDEFAULTS = NoSuccessor("the PodDefault admission webhook (admission-webhook); not in the catalog")
SPARTAKUS = NoSuccessor("usage reporting, removed upstream")
SPARK = NoSuccessor("the Spark operator; not in the catalog (install kubeflow/spark-operator with its Helm chart)")
ALB_INGRESS = NoSuccessor("an ALB Ingress in front of Istio's gateway; ingress is not part of the catalog")
CLOUD_ENDPOINTS = NoSuccessor("GCP Cloud Endpoints DNS for the v1 ingress; ingress is not part of the catalog")
IAP_INGRESS = NoSuccessor("the GCP Ingress with IAP login of kfctl v1; ingress is not part of the catalog")
GPU_DRIVER = NoSuccessor(
    "installed NVIDIA drivers on GKE nodes; use GKE's driver installation (GKE runs its own device plugin)"
)
SELDON = NoSuccessor("Seldon Core, a third-party model server; not in the catalog, whose model serving is kserve")

# Package paths (a repoRef path or a prefix of one) and application names → outcome. A path is looked up
# longest prefix first, so "aws/nvidia-device-plugin" wins over "aws"; under stacks/<x>/application/ the
# directory name is the key.
PACKAGES: dict[str, Outcome] = {
    # kfctl's own plumbing and the namespace
    "namespaces": Successor(
        ("common",), "v1 also labelled it istio-injection: enabled; Namespace cert-manager comes with cert-manager"
    ),
    "kubeflow-roles": Successor(("common",)),  # the aggregated ClusterRoles kubeflow-admin/edit/view
    "application": APPLICATION,
    "application/application": APPLICATION,
    "application/application-crds": APPLICATION,
    "application-crds": APPLICATION,
    "metacontroller": NoSuccessor(
        "ran the multi-user pipelines profile controller; the catalog's pipelines are single-user and need none"
    ),
    "spartakus": SPARTAKUS,
    "common/spartakus": SPARTAKUS,
    # cert-manager
    "cert-manager": CERT_MANAGER,
    "cert-manager-crds": CERT_MANAGER,
    "cert-manager-kube-system-resources": Successor(
        ("cert-manager",), "its leader election lives in namespace cert-manager, not kube-system"
    ),
    "cert-manager/cert-manager-kube-system-resources": Successor(
        ("cert-manager",), "its leader election lives in namespace cert-manager, not kube-system"
    ),
    # Istio, Knative, ingress and login
    "istio": ISTIO,
    "istio-1-3-1": ISTIO,
    "istio-stack": ISTIO,
    "istio-1-3-1-stack": ISTIO,
    "istio-crds": ISTIO,
    "istio-install": ISTIO,
    "istio/cluster-local-gateway": CLUSTER_LOCAL_GATEWAY,
    "cluster-local-gateway": CLUSTER_LOCAL_GATEWAY,
    "cluster-local-gateway-1-3-1": CLUSTER_LOCAL_GATEWAY,
    "istio/add-anonymous-user-filter": ANONYMOUS_USER,
    "istio/add-anonymous-user-filter-istio-1.6": ANONYMOUS_USER,
    "add-anonymous-user-filter": ANONYMOUS_USER,
    "add-anonymous-user-filter-istio-1-6": ANONYMOUS_USER,
    "istio/kfserving-gateway": NoSuccessor(
        "an Istio gateway for KFServing; the catalog's kserve (RawDeployment mode) needs none"
    ),
    "kfserving-gateway": NoSuccessor(
        "an Istio gateway for KFServing; the catalog's kserve (RawDeployment mode) needs none"
    ),
    "istio/oidc-authservice": AUTH,
    "oidc-authservice": AUTH,
    "oidc-authservice-appid": AUTH,
    "dex-auth": AUTH,
    "dex": AUTH,
    "common/basic-auth": AUTH,
    "istio-ingress-cognito": AUTH,
    "knative": NoSuccessor(
        "Knative Serving, which KFServing ran on; the catalog's kserve runs in RawDeployment mode without it"
    ),
    # Multi-user and web UIs
    "profiles": PROFILES,
    "profile-control-plane": PROFILES,
    "default-install": NoSuccessor("created the first user's Profile; profiles are not in the catalog"),
    "common/centraldashboard": DASHBOARD,
    "centraldashboard": DASHBOARD,
    "admission-webhook": PODDEFAULTS,
    "bootstrap": PODDEFAULTS,
    "webhook": PODDEFAULTS,
    # Notebooks, TensorBoard
    "jupyter": NOTEBOOKS,
    "jupyter/jupyter-web-app": JUPYTER_UI,
    "jupyter-web-app": JUPYTER_UI,
    "notebooks": JUPYTER_UI,  # the ibm stack's web app and controller
    "notebook-controller": NOTEBOOKS,
    "jupyter/notebook-controller": NOTEBOOKS,
    "tensorboard": Successor(
        ("tensorboard-controller",),
        "v1 ran one TensorBoard Deployment; the catalog's controller runs one per Tensorboard resource",
    ),
    # Training
    "tf-training": TRAINING,
    "tf-job": TRAINING,
    "tf-job-operator": TRAINING,
    "tf-job-crds": TRAINING,
    "pytorch-job": TRAINING,
    "pytorch-operator": TRAINING,
    "pytorch-job-crds": TRAINING,
    "mpi-job": Successor(("training-operator",), "MPIJob kubeflow.org/v1, the version v1.2's mpi-operator stored"),
    "mpi-operator": Successor(("training-operator",), "MPIJob kubeflow.org/v1, the version v1.2's mpi-operator stored"),
    "xgboost-job": TRAINING,
    "xgboost-operator": TRAINING,
    "mxnet-job": MXNET,
    "mxnet-operator": MXNET,
    "katib": Successor(("katib",)),
    "katib-crds": Successor(("katib",)),
    "katib-controller": Successor(("katib",)),
    # Pipelines and metadata
    "pipeline": PIPELINES,
    "pipeline/installs/multi-user": Successor(
        ("pipelines",), "v1 ran multi-user; the catalog's pipelines are single-user"
    ),
    "pipeline/minio": Successor(
        ("pipelines",), "artifacts go to SeaweedFS (claim seaweedfs-pvc); data in MinIO's claim is not moved"
    ),
    "pipeline/installs/tekton": Successor(("pipelines",), "runs on Argo Workflows, not Tekton"),
    "kfp-argo": PIPELINES,
    "kfp-argo-multi-user": Successor(("pipelines",), "v1 ran multi-user; the catalog's pipelines are single-user"),
    "kfp-tekton": Successor(("pipelines",), "runs on Argo Workflows, not Tekton"),
    "kfp-tekton-multi-user": Successor(("pipelines",), "runs on Argo Workflows, not Tekton, single-user"),
    "argo": Successor(("pipelines",), "the catalog's pipelines include the Argo Workflows controller"),
    "metadata": Successor(("pipelines",), "ML Metadata (gRPC server, Envoy) is part of the catalog's pipelines"),
    "tektoncd": NoSuccessor("Tekton, for KFP on Tekton; the catalog's pipelines run on Argo Workflows"),
    **{
        name: PIPELINES
        for name in (
            "api-service",
            "minio",
            "mysql",
            "persistent-agent",
            "pipelines-runner",
            "pipelines-ui",
            "pipelines-viewer",
            "scheduledworkflow",
            "pipeline-visualization-service",
        )
    },
    # Serving
    "kfserving": KSERVE,
    "kfserving-crds": KSERVE,
    "kfserving-install": KSERVE,
    "seldon": SELDON,
    "seldon-core-operator": SELDON,
    # Spark
    "spark": SPARK,
    "spark-operator": SPARK,
    # Cloud-specific parts of kfctl v1
    "aws": NoSuccessor(
        "an AWS add-on of kfctl v1 (ALB ingress, authz adaptor, EFS/FSx CSI driver, CloudWatch logging); not in the "
        "catalog: install it from its own project"
    ),
    "aws/nvidia-device-plugin": Successor(("nvidia-device-plugin",)),
    "aws/istio-ingress": ALB_INGRESS,
    "istio-ingress": ALB_INGRESS,
    "aws/aws-istio-authz-adaptor": AUTH,
    "aws-istio-authz-adaptor": AUTH,
    "gcp": NoSuccessor("GCP setup of kfctl v1 (Cloud Endpoints, IAP ingress, Prometheus); not in the catalog"),
    "gcp/cloud-endpoints": CLOUD_ENDPOINTS,
    "cloud-endpoints": CLOUD_ENDPOINTS,
    "gcp/iap-ingress": IAP_INGRESS,
    "iap-ingress": IAP_INGRESS,
    "gcp/gpu-driver": GPU_DRIVER,
    "gpu-driver": GPU_DRIVER,
}

# The umbrella applications of kfctl v1.2 (named kubeflow-apps in the official KfDefs): the packages each
# stacks/<x>/kustomization.yaml of kubeflow/manifests v1.2.0 lists under resources, verbatim.
_CONTROL_PLANE = (
    "admission-webhook/webhook/v3",
    "common/centraldashboard/overlays/stacks",
    "kubeflow-roles/base",
)
_TRAINING = (
    "pytorch-job/pytorch-job-crds/overlays/application",
    "pytorch-job/pytorch-operator/overlays/application",
    "tf-training/tf-job-crds/overlays/application",
    "tf-training/tf-job-operator/overlays/application",
)
_MORE_TRAINING = ("mxnet-job/mxnet-operator/overlays/application", "mpi-job/mpi-operator/overlays/application")
_KATIB_PIPELINES_SELDON = (  # kubernetes and aws alike
    "katib/installs/katib-standalone",
    "pipeline/minio/installs/generic",
    "pipeline/mysql/installs/generic",
    "pipeline/installs/multi-user",
    "argo/base_v3",
    "seldon/seldon-core-operator/overlays/application",
)
STACKS: dict[str, tuple[str, ...]] = {
    "stacks/kubernetes": (
        *_CONTROL_PLANE,
        "jupyter/jupyter-web-app/base_v3",
        "jupyter/notebook-controller/base_v3",
        "profiles/base_v3",
        *_TRAINING,
        *_MORE_TRAINING,
        *_KATIB_PIPELINES_SELDON,
        "metadata/v3",
    ),
    "stacks/aws": (
        *_CONTROL_PLANE,
        "stacks/aws/application/jupyter-web-app",
        "jupyter/notebook-controller/base_v3",
        "profiles/base_v3",
        *_TRAINING,
        *_MORE_TRAINING,
        *_KATIB_PIPELINES_SELDON,
        "aws/aws-alb-ingress-controller/base_v3",
        "aws/nvidia-device-plugin/overlays/application",
        "default-install/base",
        "metadata/v3",
    ),
    "stacks/azure": (
        "admission-webhook/webhook/v3",
        "kubeflow-roles/base",
        "stacks/azure/application/jupyter-web-app",
        "jupyter/notebook-controller/base_v3",
        "profiles/base_v3",
        "stacks/azure/application/spark-operator",
        "stacks/azure/application/spartakus",
        "stacks/azure/application/centraldashboard",
        *_TRAINING,
        *_MORE_TRAINING,
        "katib/installs/katib-standalone",
        "pipeline/minio/installs/generic",
        "pipeline/mysql/installs/generic",
        "pipeline/installs/generic",
        "argo/base_v3",
        "knative/installs/generic",
        "kfserving/installs/generic",
        "default-install/base",
        "metadata/v3",
    ),
    "stacks/gcp": (
        *_CONTROL_PLANE,
        "jupyter/jupyter-web-app/base_v3",
        "jupyter/notebook-controller/base_v3",
        "profiles/base_v3",
        *_TRAINING,
        "argo/base_v3",
        "pipeline/minio/installs/gcp-pd",
        "pipeline/mysql/installs/gcp-pd",
        "pipeline/installs/multi-user",
        "metadata/v3",
        "kfserving/installs/generic",
        "default-install/base",
        "katib/installs/katib-standalone",
    ),
    "stacks/ibm": (
        *_CONTROL_PLANE,
        "stacks/ibm/application/jupyter-web-app",
        "stacks/ibm/application/notebook-controller",
        "stacks/ibm/application/profiles",
        "pipeline/minio/installs/ibm",
        "pipeline/mysql/installs/ibm",
        "pipeline/installs/generic",
        "argo/base_v3",
        "stacks/ibm/application/metadata",
        *_TRAINING,
        "katib/installs/katib-standalone-ibm",
        "seldon/seldon-core-operator/overlays/application",
    ),
    "stacks/openshift": ("common/centraldashboard/overlays/stacks", "profiles/base_v3"),
}

_STACK_APPLICATION = ("stacks", "application")  # stacks/<x>/application/<name>/...: a package of stack <x>


def package_outcome(path: str, name: str) -> tuple[str, Outcome] | None:
    """The table key and outcome for an application: by its repoRef path (longest known prefix, or the
    directory under stacks/<x>/application/), else by its name. None: neither is known."""
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) >= 4 and (parts[0], parts[2]) == _STACK_APPLICATION:
        parts = parts[3:]
    for end in range(len(parts), 0, -1):
        key = "/".join(parts[:end])
        if key in PACKAGES:
            return key, PACKAGES[key]
    if name in PACKAGES:
        return name, PACKAGES[name]
    return None


# kfctl v1's plugin kinds (pkg/apis/apps/kfdef/v1: KfAwsPlugin, KfGcpPlugin, KfMinikubePlugin,
# KfExistingArriktoPlugin) that are not a catalog platform's plugin, and the platform each becomes.
LEGACY_PLUGINS: dict[str, tuple[str, str]] = {
    "KfMinikubePlugin": ("generic", "a Minikube cluster is an existing cluster without cloud integration"),
    "KfExistingArriktoPlugin": ("generic", "an existing cluster (with Dex login, which is not in the catalog)"),
}

# Platform parameters that kfctl v1 took from the install's name, with the evidence.
NAME_SETTINGS: dict[str, tuple[str, str]] = {
    "gcp": ("cluster", "kfctl v1 created the GKE cluster with the install's name"),
    "aws": ("clusterName", "kfctl v1's EKS guide named the install after the cluster"),
}

PLUGIN_FIELD_REASONS: dict[str, str] = {
    "auth": "login (basic auth, IAP, Cognito, OIDC) is not part of the catalog",
}


@dataclass(frozen=True)
class Carry:
    """The value goes to this catalog parameter of the successor."""

    parameter: str


@dataclass(frozen=True)
class Fixed:
    """The catalog always does this; a v1 value equal to it loses nothing."""

    value: str
    reason: str


@dataclass(frozen=True)
class Drop:
    reason: str


Rule = Carry | Fixed | Drop

_JUPYTER_UI_SETTING = Drop("a setting of the Jupyter web app, which the catalog does not ship")
_GCE_DISK = Drop("bound a pre-created GCE persistent disk; the catalog's claims come from the platform's StorageClass")

# (catalog component, v1 parameter name) → rule. Parameters of a v1.0 application were its package's
# params.env entries; names not here are carried when the component declares the same name, and dropped
# otherwise. A "namespace" parameter not here compares with the component's namespace.
PARAMETERS: dict[tuple[str, str], Rule] = {
    ("notebook-controller", "USE_ISTIO"): Carry("useIstio"),
    ("notebook-controller", "ISTIO_GATEWAY"): Fixed(
        "kubeflow/kubeflow-gateway", "the catalog's notebook-controller always uses gateway kubeflow/kubeflow-gateway"
    ),
    ("notebook-controller", "POD_LABELS"): Drop("labels that mounted GCP credentials (user-gcp-sa) in notebooks"),
    ("notebook-controller", "injectGcpCredentials"): Drop(
        "mounted a GCP service-account key (user-gcp-sa) in notebooks"
    ),
    **{
        ("notebook-controller", name): _JUPYTER_UI_SETTING
        for name in ("userid-header", "userid-prefix", "UI", "ROK_SECRET_NAME", "policy", "prefix")
    },
    ("pipelines", "mysqlPvcName"): Fixed("mysql-pv-claim", "the catalog's MySQL claim is always mysql-pv-claim"),
    ("pipelines", "minioPvcName"): Drop(
        "the catalog keeps artifacts in SeaweedFS (claim seaweedfs-pvc), not MinIO; MinIO's data is not moved"
    ),
    **{("pipelines", name): _GCE_DISK for name in ("minioPd", "minioPvName", "mysqlPd", "mysqlPvName")},
    ("cert-manager", "certManagerNamespace"): Fixed("cert-manager", "the catalog installs cert-manager there"),
    ("cert-manager", "acmeEmail"): Drop("for v1's Let's Encrypt ClusterIssuer; the catalog creates no ClusterIssuer"),
    ("cert-manager", "acmeUrl"): Drop("for v1's Let's Encrypt ClusterIssuer; the catalog creates no ClusterIssuer"),
}

# v1.0 overlays (directories overlays/<name> of a package) → rule; Fixed means nothing is lost. Keyed by the
# PACKAGES key the application matched, else "*".
_NOTEBOOK_ISTIO = Drop(
    "made the controller create an Istio VirtualService per notebook; set parameter useIstio: true if you keep Istio"
)
_ISTIO_OVERLAY = Drop("Istio routing (VirtualService) for the component; Istio is not in the catalog")
OVERLAYS: dict[tuple[str, str], Rule] = {
    ("*", "application"): Fixed("", "an app.k8s.io Application resource; kfctl keeps its own inventory instead"),
    ("*", "istio"): _ISTIO_OVERLAY,
    **{(key, "istio"): _NOTEBOOK_ISTIO for key in ("jupyter/notebook-controller", "notebook-controller")},
    ("metadata", "db"): Fixed(
        "", "metadata's own MySQL; ML Metadata in the catalog's pipelines uses the pipelines MySQL"
    ),
    ("cert-manager", "self-signed"): Fixed(
        "",
        "ClusterIssuer kubeflow-self-signing-issuer; each catalog component brings its own Issuer (create it yourself "
        "if your own Certificates name it)",
    ),
    ("cert-manager", "letsencrypt"): Drop("a Let's Encrypt ClusterIssuer; the catalog creates no ClusterIssuer"),
    ("pipeline/minio", "minioPd"): _GCE_DISK,
    ("pipeline", "mysqlPd"): _GCE_DISK,
}
