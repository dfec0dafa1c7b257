"""Read the live state a step's health depends on (one object, or the facts behind a webhook backend).

Runs in the engine's worker threads. Pure verdicts come from kfctl.health; this module only fetches.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from kfctl.health.model import Health, condition, explain, failed, progressing, ready, status_of
from kfctl.health.pods import pod_problems
from kfctl.health.registry import BUILTIN_GROUPS, health_of
from kfctl.health.waitrules import SHIPPED, WaitRules
from kfctl.health.webhook import BackendFacts, previous_rollout_pods, webhook_backend
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Unreachable
from kfctl.k8s.errors import Forbidden
from kfctl.objects import Obj, ObjectKey, meta_of
from kfctl.plan.graph import ExternalCheck, WebhookBackend
from kfctl.plan.selectors import to_query
from kfctl.plan.statusless import holds_no_status

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
WORKLOADS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job")})


def get_key(cluster: Cluster, key: ObjectKey) -> Obj | None:
    res = cluster.resource_for_key(key)
    return cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)


def age_seconds(obj: Obj) -> float:
    stamp = meta_of(obj).get("creationTimestamp")
    if not stamp:
        return 0.0
    try:
        created = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (datetime.now(timezone.utc) - created).total_seconds()


def object_health(cluster: Cluster, live: Obj, *, wait_rules: WaitRules = SHIPPED) -> Health:
    """The rule of the object's kind (``wait_rules``: how custom kinds are judged) on ``live``, with what else
    the rule needs read from the cluster."""
    wfc = False
    if live.get("kind") == "PersistentVolumeClaim" and (live.get("status") or {}).get("phase") != "Bound":
        wfc = _wait_for_first_consumer(cluster, live)
    health = health_of(live, age_seconds=age_seconds(live), wait_for_first_consumer=wfc, wait_rules=wait_rules)
    if health.state == "progressing" and not status_of(live) and _kind_holds_no_status(cluster, live):
        # apply does not wait for such kinds (plan.statusless); status and check must not either.
        return ready("applied (its CRD has no status for a controller to report)")
    return health


def _kind_holds_no_status(cluster: Cluster, live: Obj) -> bool:
    """Asked only of a fresh custom resource inside the grace window, so the extra read is rare."""
    api_version = str(live.get("apiVersion", ""))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    if group in BUILTIN_GROUPS:
        return False
    try:
        res = cluster.resource_for_key(ObjectKey(group, str(live.get("kind", "")), "", ""))
        crd = cluster.get(
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", namespace="", name=f"{res.plural}.{group}"
        )
    except (ApiError, NoKindMatch):
        return False
    return crd is not None and holds_no_status(crd)


def _wait_for_first_consumer(cluster: Cluster, pvc: Obj) -> bool:
    name = (pvc.get("spec") or {}).get("storageClassName")
    classes = cluster.list("storage.k8s.io/v1", "StorageClass")
    for sc in classes:
        meta = meta_of(sc)
        is_default = (meta.get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
        if (name and meta.get("name") == name) or (not name and is_default):
            return sc.get("volumeBindingMode") == "WaitForFirstConsumer"
    return False


def backend_health(cluster: Cluster, backend: WebhookBackend, *, wait_rules: WaitRules = SHIPPED) -> Health:
    ca_set = True
    admission: list[dict[str, Any]] = []  # the admission webhooks served here, to ask once all else is ready
    for config_key, hook_name in backend.configs:
        live = get_key(cluster, config_key)
        if live is None:
            return progressing(f"{config_key} is not registered")
        if config_key.kind == "CustomResourceDefinition":
            cc = (((live.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}
            ca_set = ca_set and bool(cc.get("caBundle"))
            continue
        hooks = [h for h in live.get("webhooks") or [] if h.get("name") == hook_name]
        ca_set = ca_set and bool(hooks) and all((h.get("clientConfig") or {}).get("caBundle") for h in hooks)
        admission += hooks
    deployment = None
    live_dep = get_key(cluster, backend.deployment) if backend.deployment is not None else None
    if backend.deployment is not None:
        deployment = object_health(cluster, live_dep) if live_dep else progressing("does not exist")
    certificate = None
    if backend.certificate is not None:
        try:
            live_cert = get_key(cluster, backend.certificate)
        except NoKindMatch:  # cert-manager's CRD is missing: say so instead of failing the probe
            live_cert = None
        certificate = (
            object_health(cluster, live_cert, wait_rules=wait_rules) if live_cert else progressing("does not exist")
        )
    service_exists, ready_endpoints = True, 0
    old_pods: tuple[str, ...] = ()
    if backend.service is not None:
        svc = cluster.get("v1", "Service", namespace=backend.service.namespace, name=backend.service.name)
        slices = _endpoint_slices(cluster, backend.service.namespace, backend.service.name)
        service_exists, ready_endpoints = svc is not None, _ready_count(slices)
        if live_dep is not None and deployment is not None and deployment.ready:
            # Rolled out: does the Service still list a pod of the release before? (kfctl.health.webhook)
            old_pods = previous_rollout_pods(live_dep, _replica_sets(cluster, live_dep), slices)
    facts = BackendFacts(
        service=backend.label,
        is_url=backend.service is None,
        service_exists=service_exists,
        ready_endpoints=ready_endpoints,
        ca_bundle_set=ca_set,
        ca_required=backend.service is not None,
        deployment=deployment,
        deployment_name=f"{backend.deployment.namespace}/{backend.deployment.name}" if backend.deployment else "",
        certificate=certificate,
        certificate_name=f"{backend.certificate.namespace}/{backend.certificate.name}" if backend.certificate else "",
        old_pods=old_pods,
    )
    health = webhook_backend(facts)
    if health.ready:
        missing = [why for why in (handler_problem(cluster, hook) for hook in admission) if why]
        if missing:
            return progressing("; ".join(missing))
    return health


# The smallest AdmissionReview a webhook server decodes: it answers (allowed or not) if it serves the path.
PROBE_REVIEW: Obj = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "00000000-0000-0000-0000-00006b666374",
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "kfctl-webhook-probe",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "kfctl"},
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kfctl-webhook-probe"}},
        "dryRun": True,
    },
}


def handler_problem(cluster: Cluster, hook: dict[str, Any]) -> str:
    """Whether the server behind an admission webhook serves its path yet ("" when it does, or when it cannot be
    asked). A controller can be Ready before it registers its handlers: the API server's calls then fail with
    "the server could not find the requested resource" (its 404). Asked as the API server asks, through its
    service proxy, with a dry-run review of a ConfigMap; only webhooks without side effects are asked."""
    cc = hook.get("clientConfig") or {}
    svc = cc.get("service")
    if not svc or hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
        return ""
    path = str(svc.get("path") or "/")
    try:
        answer = cluster.post_to_service(
            namespace=str(svc.get("namespace", "")),
            name=str(svc.get("name", "")),
            port=int(svc.get("port") or 443),
            path=path,
            body=PROBE_REVIEW,
        )
    except (ApiError, Unreachable):
        return ""  # the health of the Service and its endpoints says the rest
    if answer.status == 404 and not answer.from_api_server:
        return f"webhook {hook.get('name')}: its server answers but does not serve {path} yet (HTTP 404)"
    return ""


def _endpoint_slices(cluster: Cluster, namespace: str, service: str) -> list[Obj]:
    return cluster.list(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        namespace=namespace,
        label_selector=f"kubernetes.io/service-name={service}",
    )


def _ready_count(slices: list[Obj]) -> int:
    # The API says a missing "ready" means ready.
    return sum(
        1
        for s in slices
        for ep in s.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready", True) is not False
    )


def _replica_sets(cluster: Cluster, deployment: Obj) -> list[Obj]:
    """The ReplicaSets in the Deployment's namespace that carry its selector's labels (its own among them: the
    controller copies the pod template's labels onto them). Read only while a backend waits, and not watched: the
    EndpointSlice an old pod leaves is, and its change has the backend checked again. Forbidden (RBAC): []."""
    meta = meta_of(deployment)
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    try:
        return cluster.list(
            "apps/v1", "ReplicaSet", namespace=str(meta.get("namespace", "")), label_selector=to_query(labels)
        )
    except Forbidden:  # not allowed to list them: the Deployment's own health is all there is (else retried)
        return []


def external_health(cluster: Cluster, check: ExternalCheck) -> Health:
    """An application the cluster provides: its CRDs served, and every failurePolicy=Fail webhook that guards
    their groups answering (a ready endpoint behind its Service, a CA bundle), wherever and by whomever it was
    installed — the webhook configurations are found in the cluster, not assumed to carry our names."""
    if not check.crds:
        return ready("provided by the cluster (not a catalog component: kfctl has nothing to check)")
    missing: list[str] = []
    waiting: list[str] = []
    groups: set[str] = set()
    for name in check.crds:
        crd = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", namespace="", name=name)
        if crd is None:
            missing.append(name)
            continue
        groups.add(str((crd.get("spec") or {}).get("group", "")))
        h = object_health(cluster, crd)
        if not h.ready:
            waiting.append(f"CRD {name}: {h.message}")
    if missing:
        return failed(
            f"the cluster does not serve {', '.join(missing)}; the KfDef says it provides application "
            f"{check.application} (external: true): install it, or drop external: true to let kfctl install it"
        )
    hooks = 0
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for config in cluster.list("admissionregistration.k8s.io/v1", kind):
            for hook in config.get("webhooks") or []:
                if hook.get("failurePolicy", "Fail") != "Fail" or not _guards(hook, groups):
                    continue
                hooks += 1
                why = webhook_problem(cluster, hook)
                if why:
                    waiting.append(f"webhook {hook.get('name')} ({kind} {meta_of(config).get('name')}): {why}")
    if waiting:
        return progressing("; ".join(waiting))
    return ready(f"{len(check.crds)} CRDs served, {hooks} webhook(s) guarding them answer")


def _guards(hook: dict[str, Any], groups: set[str]) -> bool:
    return any(
        "*" in (rule.get("apiGroups") or []) or groups & set(rule.get("apiGroups") or [])
        for rule in hook.get("rules") or []
    )


def webhook_problem(cluster: Cluster, hook: dict[str, Any]) -> str:
    """Why the API server cannot call a webhook (of a webhook configuration's ``webhooks``), "" when nothing in
    the cluster says so: no caBundle, its Service missing, or no ready endpoint behind it."""
    cc = hook.get("clientConfig") or {}
    svc = cc.get("service")
    if not svc:
        return ""  # a URL: nothing in the cluster to look at
    if not cc.get("caBundle"):
        return "no caBundle injected yet"
    ns, name = str(svc.get("namespace", "")), str(svc.get("name", ""))
    if cluster.get("v1", "Service", namespace=ns, name=name) is None:
        return f"its Service {ns}/{name} does not exist"
    if not _ready_count(_endpoint_slices(cluster, ns, name)):
        return f"Service {ns}/{name} has no ready endpoint"
    return ""


def workload_problems(cluster: Cluster, key: ObjectKey, live: Obj) -> list[str]:
    """Why a workload's pods are not ready (Unschedulable, ImagePullBackOff …), from its pods and events."""
    if (key.group, key.kind) not in WORKLOADS:
        return []
    selector: dict[str, Any] = ((live.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if key.kind == "Job":
        selector = {"job-name": key.name}
    if not selector:
        return []
    pods = cluster.list("v1", "Pod", namespace=key.namespace, label_selector=to_query(selector))
    names = {meta_of(p).get("name") for p in pods}
    events = [e for e in _events(cluster, key.namespace) if (e.get("involvedObject") or {}).get("name") in names]
    problems = pod_problems(pods, events)
    if not pods:
        # The ReplicaSet controller's last refusal (a webhook, a quota), which the Deployment carries over.
        refused = condition(live, "ReplicaFailure")
        if refused and refused.get("status") == "True":
            problems.append(f"no pods created: {explain(refused)}")
        else:
            problems.append("no pods created (check the ReplicaSet's events: quota, admission, service account)")
    return problems


def _events(cluster: Cluster, namespace: str) -> list[Obj]:
    try:
        return cluster.list("v1", "Event", namespace=namespace)
    except (ApiError, NoKindMatch):
        return []
