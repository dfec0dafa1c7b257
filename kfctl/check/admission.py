"""The functional probes of `kfctl check`: a server-side dry-run create of a component's sample (kfctl.check.
samples) through the real admission webhooks, and, when the API server refuses it, why — the way `cmctl check
api` tells them apart:

- the kind is not served (its CRD is missing): the component is not installed;
- "failed calling webhook" with an x509 error: the API server does not trust the webhook's certificate, so the
  CA bundle was not injected (or is stale);
- "failed calling webhook" otherwise: the webhook's Service is missing, or its backend is not ready (no ready
  endpoint, connection refused, a timeout) — what the cluster says about the webhook's Service decides which,
  because the API server's words depend on its version and on the network between it and the webhook;
- ``admission webhook "…" denied the request``: a webhook refused a valid sample, quoted.

Anything else is judged as apply judges it (the type kfctl.k8s.errors gives it). Writes nothing but dry runs.

A failed call to a webhook whose Service the cluster shows ready is tried again for up to ``SETTLE`` seconds
before it is judged (``while_settling``, also used by the smoke jobs' create): some controllers report Ready
before they register their webhook handlers. The training operator (v1.9) is Ready once its certificates exist
and its webhook server listens, then registers one scheme's handler after another in a goroutine, so for a
moment after `kfctl apply` reports it healthy the API server's call gets a 404 ("the server could not find the
requested resource"). `linkerd check` waits for its checks the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from kfctl.check.model import InstalledContext, Outcome
from kfctl.check.samples import NAME_PREFIX, Sample
from kfctl.engine.probe import webhook_problem
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.k8s.errors import Forbidden, Transient, WebhookDenied
from kfctl.objects import Obj, group_of

WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
SETTLE = 10.0  # seconds a webhook whose backend the cluster shows ready may take to answer
SETTLE_INTERVAL = 1.0

T = TypeVar("T")

HINT_NOT_SERVED = (
    "kfctl apply APPDIR installs it (kfctl status APPDIR shows what is missing); an application marked "
    "`external: true` must be installed by whoever provides it"
)
HINT_CA = (
    "cert-manager's cainjector copies the CA into the webhook configuration (annotation "
    "cert-manager.io/inject-ca-from): check that cert-manager-cainjector runs and that the webhook's Certificate "
    "is Ready (kfctl status APPDIR)"
)
HINT_SERVICE = "kfctl apply APPDIR re-creates it"
HINT_BACKEND = (
    "the component's controller is not running or not ready: kfctl status APPDIR names its Deployment and why "
    "(kubectl get pods -n NAMESPACE, kubectl logs)"
)
HINT_DENIED = (
    "the webhook refuses a sample its upstream accepts: a policy engine (Kyverno, Gatekeeper) or a changed "
    "webhook configuration; the log of the webhook's controller says why"
)


def dry_run_create(sample: Sample) -> Callable[[InstalledContext], Outcome]:
    """The check that probes ``sample``'s component."""

    def run(ctx: InstalledContext) -> Outcome:
        return probe(ctx, sample)

    return run


def probe(ctx: InstalledContext, sample: Sample) -> Outcome:
    namespace = ctx.namespaces.get(sample.component) or ctx.namespace
    if sample.namespace_labels:
        selector = ",".join(f"{k}={v}" for k, v in sample.namespace_labels)
        labelled = sorted(
            str(n["metadata"]["name"]) for n in ctx.cluster.list("v1", "Namespace", label_selector=selector)
        )
        if not labelled:
            kinds = sample.kinds
            return Outcome(
                "warn",
                f"no namespace is labelled {selector}: {sample.component}'s webhook accepts {kinds} objects only "
                "in such a namespace, so nobody can create one yet",
                f"label the namespace(s) your users work in: kubectl label namespace NAMESPACE {selector}",
            )
        namespace = namespace if namespace in labelled else labelled[0]
    for obj in sample.instantiate(name=f"{NAME_PREFIX}{ctx.suffix}", namespace=namespace):
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        try:
            ctx.cluster.resource(api_version, kind)
        except NoKindMatch:
            return Outcome(
                "fail",
                f"the cluster does not serve {kind} ({api_version}): is {sample.component} installed?",
                HINT_NOT_SERVED,
            )
        try:
            while_settling(ctx, functools.partial(ctx.cluster.apply, obj, dry_run=True))
        except NoKindMatch:  # its CRD went away between the two requests
            return Outcome(
                "fail",
                f"the cluster does not serve {kind} ({api_version}): is {sample.component} installed?",
                HINT_NOT_SERVED,
            )
        except ApiError as e:
            return rejected(ctx.cluster, obj, e)
    where = "cluster-wide" if sample.cluster_scoped else f"in {namespace}"
    return Outcome(
        "pass",
        f"the API server and its admission webhooks accept a new {sample.kinds} {where} "
        "(server-side dry run, nothing stored)",
    )


def while_settling(ctx: InstalledContext, call: Callable[[], T]) -> T:
    """``call()``, tried again every ``SETTLE_INTERVAL`` s for up to ``SETTLE`` s while it fails only because the
    API server could not call a webhook whose backend the cluster shows ready (Service, ready endpoint and CA
    bundle all there): one that is starting. Any other error, and the last one, is raised."""
    deadline = ctx.clock() + SETTLE
    while True:
        try:
            return call()
        except ApiError as e:
            if ctx.clock() >= deadline or not _starting(ctx.cluster, e):
                raise
        ctx.sleep(SETTLE_INTERVAL)


def _starting(cluster: Cluster, err: ApiError) -> bool:
    name = err.failed_webhook
    if name is None or err.untrusted_certificate or err.missing_service is not None:
        return False
    hook = _find_webhook(cluster, name)
    return hook is not None and webhook_problem(cluster, hook) == ""


def rejected(cluster: Cluster, obj: Obj, err: ApiError) -> Outcome:
    """Why the API server refused the dry run of ``obj``, with what to do about it."""
    kind, text = str(obj["kind"]), err.message
    if isinstance(err, WebhookDenied):
        return Outcome("fail", f"a valid {kind} was denied: {text}", HINT_DENIED)
    hook = err.failed_webhook
    if hook is not None:
        if err.untrusted_certificate:
            return Outcome(
                "fail",
                f'webhook "{hook}" cannot be called: the API server does not trust its certificate (CA bundle not '
                f"injected or stale): {text}",
                HINT_CA,
            )
        return _not_answering(cluster, hook, err)
    if isinstance(err, Transient):
        return Outcome(
            "fail",
            f"the API server could not take a {kind}: {err.explanation}",
            "re-run; if it persists, check the API server's health (kubectl get --raw /readyz)",
        )
    if isinstance(err, Forbidden):
        return Outcome(
            "fail",
            f"may not create a {kind} ({group_of(str(obj['apiVersion'])) or 'core'}): {text}",
            "grant the user create on it, or run the check with a kubeconfig that may",
        )
    return Outcome(
        "fail",
        f"the API server refused a valid {kind}: {err.explanation}",
        "the installed CRD's schema differs from the component's: kfctl diff APPDIR shows what changed",
    )


def _not_answering(cluster: Cluster, hook_name: str, err: ApiError) -> Outcome:
    """A webhook the API server could not call: its Service is missing or its backend is not ready; the webhook
    configuration and the Service's EndpointSlices say which."""
    hook = _find_webhook(cluster, hook_name)
    why = webhook_problem(cluster, hook) if hook is not None else ""
    text, missing = err.message, err.missing_service
    if "does not exist" in why or (missing and not why):
        said = why or f"its Service {missing or '?'} does not exist"
        return Outcome("fail", f'webhook "{hook_name}" cannot be called: {said} (API server: {text})', HINT_SERVICE)
    # (a missing caBundle is not why the call failed here: without an answer there was no certificate to trust)
    facts = f" — {why}" if why.startswith(("its Service", "Service")) else ""
    return Outcome(
        "fail",
        f'webhook "{hook_name}" cannot be called: backend not ready{facts} (API server: {text})',
        HINT_BACKEND,
    )


def _find_webhook(cluster: Cluster, name: str) -> dict[str, Any] | None:
    for kind in WEBHOOK_KINDS:
        for config in cluster.list("admissionregistration.k8s.io/v1", kind):
            for hook in config.get("webhooks") or []:
                if hook.get("name") == name:
                    return dict(hook)
    return None
