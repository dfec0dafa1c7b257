"""What Argo CD needs beside the Applications `kfctl export --format argocd` writes, to sync kfctl's platform.

- ``ignoreDifferences`` for the fields another controller owns in kfctl's objects: the ``caBundle`` of webhook
  configurations, CRD conversion webhooks and APIServices, which cert-manager's cainjector (or the component's
  own controller) fills in after kfctl renders it empty, the rules of Knative's webhook configurations, which
  its webhook narrows when it starts, and the rules of aggregated ClusterRoles, which the controller manager
  fills in. Without them Argo CD shows the Application OutOfSync
  forever and its next sync writes the empty value back; with ``RespectIgnoreDifferences`` the sync leaves them.
- an ``argocd-cm`` snippet (``argocd-cm.yaml`` of the export directory, not among its resources: it belongs
  to Argo CD's own ConfigMap): Lua health checks for ``argoproj.io/Application`` (Argo CD 1.8 dropped its
  own, and without one a parent app-of-apps does not wait for a wave's children to be healthy before it
  syncs the next), for CustomResourceDefinitions (Argo CD's own calls one not established yet Degraded, which
  fails a sync wave), for Kubeflow's kinds Argo CD has none for, and for the kinds of the KfDef's own wait rules
  (``spec.waitRules``, written by :func:`rule_health_check`). Server-side apply merges the snippet's keys
  into an existing argocd-cm and leaves the others:
  ``kubectl apply --server-side --field-manager=kfctl -f argocd-cm.yaml``.

Data only; e2e/test_gitops_argocd.py checks it on Argo CD's real controller and `argocd admin settings
resource-overrides health`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kfctl.health.waitrules import SHIPPED, Match, WaitRule
from kfctl.objects import Obj, key_of

CONFIGMAP = "argocd-cm"
HEALTH_KEY = "resource.customizations.health.{group}_{kind}"

# Knative's webhooks (knative.dev/pkg) replace the broad rules of their release's configurations with the exact
# resources they serve when they start (kfctl.engine.drift leaves them to it likewise). Seen on Argo CD v3.2.11
# with upstream's Knative Serving: its configurations OutOfSync for ever, the parent's wave held.
_KNATIVE_RULES = (
    'select((.metadata.labels["app.kubernetes.io/name"] // "") | startswith("knative-")) | .webhooks[]?.rules'
)
# (group, kind) → what of it another controller fills in (jq path expressions, as Argo CD evaluates them).
OWNED_BY_OTHERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        ".webhooks[]?.clientConfig.caBundle",
        _KNATIVE_RULES,
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        ".webhooks[]?.clientConfig.caBundle",
        _KNATIVE_RULES,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (".spec.conversion.webhook.clientConfig.caBundle",),
    ("apiregistration.k8s.io", "APIService"): (".spec.caBundle",),
    # An aggregated ClusterRole's rules are the controller manager's (clusterrole-aggregation-controller), made of
    # the ClusterRoles its aggregationRule selects; kfctl renders none. Seen on Argo CD v3.2.11 with upstream's
    # kubeflow-admin/-edit/-view: Synced never, so the parent app-of-apps waited for its wave for ever.
    ("rbac.authorization.k8s.io", "ClusterRole"): ("select(.aggregationRule != null) | .rules",),
}

# A child Application is healthy to its parent once it is Synced and its own health is Healthy; until then it is
# Progressing (Missing and Unknown too: a wave waits). Degraded only once the child's own sync has failed (its
# retries spent): right after a sync a child is often Degraded for seconds (a Certificate not issued yet, a
# Deployment whose pods wait for a Secret), and a Degraded child fails the parent's whole sync operation.
_APPLICATION = """\
hs = {status = "Progressing", message = "waiting for the Application to sync"}
if obj.status == nil or obj.status.health == nil then
  return hs
end
local health = obj.status.health.status
local message = obj.status.health.message
local op = obj.status.operationState
if op ~= nil and (op.phase == "Failed" or op.phase == "Error") then
  hs.status = "Degraded"
  hs.message = op.message or op.phase
elseif health == "Suspended" then
  hs.status = health
  hs.message = message or health
elseif obj.status.sync == nil or obj.status.sync.status ~= "Synced" then
  hs.message = "not synced yet"
elseif health == "Healthy" then
  hs.status = "Healthy"
  hs.message = message or "synced and healthy"
elseif health == "Degraded" then
  hs.message = "degraded for now: " .. (message or "no message")
elseif message ~= nil then
  hs.message = message
end
return hs
"""

# status.conditions with a type per outcome: the first of `bad` that is True → Degraded, of `good` → Healthy.
_CONDITIONS = """\
hs = {{status = "Progressing", message = "{waiting}"}}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
for _, c in ipairs(obj.status.conditions) do
  if c.status == "True" then
    local message = c.message or c.reason or c.type
    if {bad} then
      hs.status = "Degraded"
      hs.message = message
      return hs
    elseif {good} then
      hs.status = "Healthy"
      hs.message = message
    elseif c.type == "Suspended" then
      hs.status = "Suspended"
      hs.message = message
    end
  end
end
return hs
"""


def _conditions(waiting: str, good: Iterable[str], bad: Iterable[str]) -> str:
    def test(types: Iterable[str]) -> str:
        return " or ".join(f'c.type == "{t}"' for t in types)

    return _CONDITIONS.format(waiting=waiting, good=test(good), bad=test(bad))


# A Notebook's controller reports its pod: ready once readyReplicas is 1; stopped (kubeflow-resource-stopped)
# is Suspended; a container waiting on an error reason is Degraded.
_NOTEBOOK = """\
hs = {status = "Progressing", message = "waiting for the notebook's pod"}
if obj.metadata.annotations ~= nil and obj.metadata.annotations["kubeflow-resource-stopped"] ~= nil then
  hs.status = "Suspended"
  hs.message = "stopped"
  return hs
end
if obj.status == nil then
  return hs
end
if obj.status.readyReplicas ~= nil and obj.status.readyReplicas >= 1 then
  hs.status = "Healthy"
  hs.message = "ready"
  return hs
end
local waiting = obj.status.containerState and obj.status.containerState.waiting
local starting = {ContainerCreating = true, PodInitializing = true}
if waiting ~= nil and waiting.reason ~= nil and not starting[waiting.reason] then
  hs.status = "Degraded"
  hs.message = waiting.reason .. ": " .. (waiting.message or "")
end
return hs
"""

# kubeflow/kubeflow's profile-controller (v1.10.0) writes no condition when it succeeds and appends a Failed one
# (type only, no status) naming what it could not do, which it never removes: the last condition says.
_PROFILE = """\
hs = {status = "Healthy", message = "no failure reported"}
if obj.status == nil or obj.status.conditions == nil or #obj.status.conditions == 0 then
  return hs
end
local last = obj.status.conditions[#obj.status.conditions]
if last.type == "Failed" then
  hs.status = "Degraded"
  hs.message = last.message or "Failed"
end
return hs
"""


def _said_by_conditions(rule: WaitRule) -> bool:
    """Whether Argo CD's Lua for ``rule`` is _CONDITIONS: every match a condition that holds when True."""
    return all(m.condition and m.status == "True" for m in (*rule.ready, *rule.failed))


def ignore_differences(objects: Iterable[Obj] | None) -> list[dict[str, Any]]:
    """The ignoreDifferences entries for the kinds among ``objects`` whose fields others fill in, sorted; for
    ``None`` (objects rendered later, by the plugin), every such kind."""
    present = set(OWNED_BY_OTHERS) if objects is None else {(key_of(o).group, key_of(o).kind) for o in objects}
    return [
        {"group": group, "kind": kind, "jqPathExpressions": list(paths)}
        for (group, kind), paths in sorted(OWNED_BY_OTHERS.items())
        if (group, kind) in present
    ]


# A KfDef's own wait rule (spec.waitRules) in Argo CD's words: its failed matches first (Degraded), then its ready
# ones (Healthy), else Progressing, as kfctl.health.waitrules judges it. A condition's message (or reason) is the
# verdict's message; a field compares as text, as kfctl compares it (true/false lower-case, a number as written).
# A field's path is written out as a table of its parts: Argo CD runs health checks without Lua's string library.
_RULE = """\
hs = {{status = "Progressing", message = {waiting}}}
local function condition(t)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == t then
      return c
    end
  end
  return nil
end
local function text(path)
  local v = obj
  for _, part in ipairs(path) do
    if type(v) ~= "table" then
      return ""
    end
    v = v[part]
  end
  if v == nil or type(v) == "table" then
    return ""
  end
  return tostring(v)
end
{matches}return hs
"""

_CONDITION_MATCH = """\
do
  local c = condition({type})
  if c ~= nil and c.status == {status} then
    hs.status = "{verdict}"
    hs.message = c.message or c.reason or {type}
    return hs
  end
end
"""

_FIELD_MATCH = """\
if text({field}) == {equals} then
  hs.status = "{verdict}"
  hs.message = {said}
  return hs
end
"""


def _lua(text: str) -> str:
    """``text`` as a Lua string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def rule_health_check(rule: WaitRule) -> str:
    """The Lua health check that says of an object what ``rule`` says (Degraded for failed, Healthy for ready)."""
    matches = []
    for verdict, group in (("Degraded", rule.failed), ("Healthy", rule.ready)):
        for m in group:
            if m.condition:
                matches.append(_CONDITION_MATCH.format(type=_lua(m.condition), status=_lua(m.status), verdict=verdict))
            else:
                said = _lua(f"{m.field} is {m.equals}")
                path = "{" + ", ".join(_lua(part) for part in m.field.split(".")) + "}"
                matches.append(_FIELD_MATCH.format(field=path, equals=_lua(m.equals), verdict=verdict, said=said))
    awaited = " or ".join(m.describe() for m in rule.ready)
    waiting = f"waiting for {awaited}" if awaited else "waiting for a failure to be reported"
    return _RULE.format(waiting=_lua(waiting), matches="".join(matches))


# Argo CD's own check calls a CRD Degraded until the API server has established it, and a Degraded object fails
# its sync wave: on a busy API server (dozens of CRDs created at once take seconds) a fresh platform's sync failed
# and waited out a retry's backoff (seen on v3.2.11: "CRD is not established", then "Retrying attempt #1"; the
# built-in platform through the plugin synced in 187 s with it, 152 s without, on a quiet machine). Not established
# yet is Progressing, as kstatus and kfctl's own CRD gate say; names refused and a non-structural schema stay Degraded.
CRD_RULE = WaitRule(
    "apiextensions.k8s.io",
    "CustomResourceDefinition",
    ready=(Match(condition="Established"),),
    failed=(Match(condition="NamesAccepted", status="False"), Match(condition="NonStructuralSchema")),
)

HEALTH_CHECKS: dict[tuple[str, str], str] = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): rule_health_check(CRD_RULE),
    ("argoproj.io", "Application"): _APPLICATION,
    ("kubeflow.org", "Profile"): _PROFILE,
    ("kubeflow.org", "Notebook"): _NOTEBOOK,
    # Kubeflow's kinds kfctl judges by a wait rule (kfctl.health.waitrules: Trainer v2's TrainJob Complete/Failed,
    # Katib's Experiment and the training operator's jobs Succeeded/Failed), in Argo CD's words: the same rule.
    **{
        (r.group, r.kind): _conditions(
            f"waiting for the {r.kind}", [m.condition for m in r.ready], [m.condition for m in r.failed]
        )
        for r in SHIPPED
        if r.group.endswith("kubeflow.org") and _said_by_conditions(r)
    },
}


def argocd_cm(namespace: str, rules: Iterable[WaitRule] = ()) -> dict[str, Any]:
    """The argocd-cm snippet: one health check per kind, keys sorted; ``rules`` (a KfDef's spec.waitRules) add
    their kinds or replace kfctl's check of them."""
    checks = HEALTH_CHECKS | {(r.group, r.kind): rule_health_check(r) for r in rules}
    data = {HEALTH_KEY.format(group=g, kind=k): lua for (g, k), lua in sorted(checks.items())}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIGMAP,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": CONFIGMAP, "app.kubernetes.io/part-of": "argocd"},
        },
        "data": data,
    }
