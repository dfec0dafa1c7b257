"""Does a live object still hold what kfctl would send? Which of kfctl's fields did someone change?

A re-apply must write nothing on an untouched platform and must put back what others changed in the fields
kfctl renders (Argo CD, Flux and kapp all compare against the live state; a hash of what was last sent cannot
see a ``kubectl set image``). ``differences`` answers from the objects alone: every field of the desired
object must hold the same value in the live one; fields kfctl does not render (replicas an HPA manages,
defaults, status, other managers' additions) are not looked at. Where the API server may have rewritten a
value (a list another manager added to, a quantity outside the paths below) it reports a difference, and the
engine asks the server with a dry run of the same apply: ``corrected_fields`` names the fields that differ now
and hold after it. Being strict costs one request; being lenient would hide drift, so values compare so:

- ``apiVersion`` is not compared: a CRD serving several versions returns the object at whichever version it
  is read, and each holds the same object (upstream Istio's Gateway rendered at v1beta1, read at v1).
- Strings compare exactly ("1.10" is not "1.1", "080" is not "80", "1G" is not "1000M"), numbers by value
  (1 is 1.0), and a bool is never a number.
- Quantities compare by value ("0.5" is "500m", "1Gi" is "1024Mi", ``cpu: 1`` is "1"), but only where the API
  server canonicalises them, the fields of type resource.Quantity: a value whose parent key is ``requests``,
  ``limits``, ``hard``, ``capacity``, ``overhead`` or ``podFixed`` (container and pod resources, a PVC's
  requests, ResourceQuota ``spec.hard``, PV ``spec.capacity``, pod and RuntimeClass overhead); one under
  ``spec.limits[*]`` ``max``, ``min``, ``default``, ``defaultRequest`` or ``maxLimitRequestRatio``
  (LimitRange); and any ``sizeLimit`` (emptyDir). ConfigMap data, env values and labels are text.
- A field the live object lacks holds a wanted null, {} or []: the server keeps no empty value. A wanted
  false, 0 or "" is *not* taken as held by a missing field, although Go's ``omitempty`` drops the zero value
  of a non-pointer field (PriorityClass ``globalDefault: false`` never comes back): from the object alone that
  cannot be told from someone deleting ``allowPrivilegeEscalation: false`` or a label ``""``, which must be
  put back. Such an object costs one dry run per re-apply, which settles it (the full catalog has one).

One exception to "kfctl's fields are kfctl's": an admission webhook configuration's fields that another manager
updated after kfctl applied them (its managedFields say so) are left to it. Webhook servers reconcile their own
configuration when they start: Knative's webhook replaces the broad ``rules`` of its release's YAML with the exact
resources it serves, istiod flips its validating webhook's ``failurePolicy``, and cert-manager's cainjector fills
``caBundle``. Putting those back is a write on every re-apply and a fight the server wins a moment later, as
upstream's own ``kubectl apply --server-side --force-conflicts`` loop finds. A person's edit is not such a
takeover: managers named ``kubectl…`` (``kubectl edit``, ``kubectl patch``) stay drift.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kfctl import quantity
from kfctl.engine import labels
from kfctl.k8s.api import FIELD_MANAGER
from kfctl.objects import Obj, meta_of

SERVER_FIELDS = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink")
IGNORED_ANNOTATIONS = (labels.HASH_ANNOTATION, "kubectl.kubernetes.io/last-applied-configuration")
# Parent keys of the resource.Quantity maps (ResourceList) kfctl may render; see the module docstring.
_QUANTITY_MAPS = frozenset({"requests", "limits", "hard", "capacity", "overhead", "podFixed"})
_LIMIT_RANGE_MAPS = frozenset({"max", "min", "default", "defaultRequest", "maxLimitRequestRatio"})


def comparable(obj: Obj, *, mask_secrets: bool = True) -> Obj:
    """The object without what the server owns (managedFields, resourceVersion, status …) and kfctl's own
    bookkeeping annotation; a Secret's values replaced by a short digest, so a change shows without the value.

    A new top level and metadata over the same nested values as ``obj`` (a deep copy of every live CRD cost
    a no-op re-apply of the full catalog most of its CPU time): neither is to be changed afterwards."""
    out = dict(obj)
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
        annotations = meta.get("annotations") or {}
        if isinstance(annotations, Mapping):
            annotations = {k: v for k, v in annotations.items() if k not in IGNORED_ANNOTATIONS}
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        out["metadata"] = meta
    if mask_secrets and _is_secret(out):
        for section in ("data", "stringData"):
            values = out.get(section)
            if isinstance(values, Mapping):
                out[section] = {k: _masked(v, encoded=section == "data") for k, v in values.items()}
    return out


def _masked(value: Any, *, encoded: bool) -> str:
    raw = _b64(value) if encoded else str(value).encode()
    return f"<masked sha256:{hashlib.sha256(raw).hexdigest()[:8]}>"


def differences(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """The fields of ``desired`` whose value ``live`` does not hold ([] when it holds them all)."""
    want = comparable(_with_string_data_encoded(desired), mask_secrets=False)
    have = comparable(dict(live), mask_secrets=False)
    # The version is how the object is read, not what it holds: a multi-version CRD's object rendered at one
    # served version (Istio's networking.istio.io/v1beta1) is read back at another (v1). The identity (group,
    # kind, namespace, name) was matched before.
    want.pop("apiVersion", None)
    have.pop("apiVersion", None)
    _leave_taken_over_webhook_fields(want, live)
    out: list[str] = []
    _compare(want, have, "", out)
    return out


WEBHOOK_CONFIGURATIONS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})


def taken_over_webhook_fields(live: Mapping[str, Any]) -> dict[str, set[str]]:
    """Webhook name → the fields of that webhook another (non-kubectl) manager updated, from ``live``'s
    managedFields (fieldsV1: ``f:webhooks`` keyed by ``k:{"name": …}``)."""
    out: dict[str, set[str]] = {}
    for entry in meta_of(live).get("managedFields") or []:
        manager = str(entry.get("manager", ""))
        if entry.get("operation") != "Update" or manager == FIELD_MANAGER or manager.startswith("kubectl"):
            continue
        hooks = (entry.get("fieldsV1") or {}).get("f:webhooks") or {}
        for key, fields in hooks.items():
            if not key.startswith("k:") or not isinstance(fields, Mapping):
                continue
            try:
                name = json.loads(key[2:]).get("name")
            except (ValueError, AttributeError):
                continue
            if isinstance(name, str):
                out.setdefault(name, set()).update(f[2:] for f in fields if f.startswith("f:"))
    return out


def _leave_taken_over_webhook_fields(want: Obj, live: Mapping[str, Any]) -> None:
    """Drop from ``want`` (a copy's webhooks list is replaced, never changed in place) the fields of each webhook
    that another manager took over; see the module docstring."""
    if want.get("kind") not in WEBHOOK_CONFIGURATIONS or not isinstance(want.get("webhooks"), list):
        return
    taken = taken_over_webhook_fields(live)
    if not taken:
        return
    want["webhooks"] = [
        {k: v for k, v in hook.items() if k not in taken.get(str(hook.get("name")), set())}
        if isinstance(hook, Mapping)
        else hook
        for hook in want["webhooks"]
    ]


def corrected_fields(desired: Mapping[str, Any], live: Mapping[str, Any], dry_run: Mapping[str, Any]) -> list[str]:
    """kfctl's fields that differ in ``live`` and that the apply puts back (they hold in ``dry_run``, the
    server's answer to the same apply); a value the server only rewrote differs in both and is not named."""
    after = set(differences(desired, dry_run))
    return [f for f in differences(desired, live) if f not in after]


def _compare(want: Any, have: Any, path: str, out: list[str], keys: tuple[str | int, ...] = ()) -> None:
    """Appends to ``out`` the fields of ``want`` that ``have`` does not hold; ``path`` names the field for a
    person, ``keys`` is where it is (mapping keys, list indexes), for the rules that depend on the field."""
    if have is _MISSING and (want is None or want == {} or want == []):
        return  # sets nothing the server keeps: a null (creationTimestamp: null) or an empty map or list
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            out.append(path or ".")
            return
        for k, v in want.items():
            _compare(v, have.get(k, _MISSING), _join(path, str(k)), out, (*keys, str(k)))
        return
    if isinstance(want, list):
        if not isinstance(have, list):
            out.append(path)
            return
        if len(want) == len(have):
            for i, (w, h) in enumerate(zip(want, have, strict=True)):
                _compare(w, h, f"{path}[{_label(w, i)}]", out, (*keys, i))
            return
        names = [w.get("name") for w in want if isinstance(w, Mapping)]
        if len(names) == len(want) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            by_name = {h.get("name"): h for h in have if isinstance(h, Mapping)}
            for i, w in enumerate(want):
                _compare(w, by_name.get(w["name"], _MISSING), f"{path}[{w['name']}]", out, (*keys, i))
            return
        out.append(path)
        return
    if not _same_scalar(want, have, keys):
        out.append(path)


class _Missing:
    pass


_MISSING = _Missing()


def _same_scalar(want: Any, have: Any, keys: tuple[str | int, ...]) -> bool:
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if _is_quantity_field(keys):
        a = quantity.parse(want)
        if a is not None:
            return a == quantity.parse(have)
        # Not a quantity after all: a CRD's schema has properties named `requests` and `limits` too, whose
        # `description` and `type` are text (taken for quantities, every such CRD "drifted" on every no-op).
    if isinstance(want, int | float) and isinstance(have, int | float):
        return want == have
    return type(want) is type(have) and want == have


def _is_quantity_field(keys: tuple[str | int, ...]) -> bool:
    """Whether the API server stores the value at ``keys`` as a resource.Quantity, rewritten canonical."""
    if not keys or not isinstance(keys[-1], str):
        return False
    if keys[-1] == "sizeLimit":
        return True
    if len(keys) >= 2 and keys[-2] in _QUANTITY_MAPS:
        return True
    # A LimitRange's spec.limits[i].max.cpu; spec.limits[i].type is text.
    return (
        len(keys) == 5 and keys[:2] == ("spec", "limits") and isinstance(keys[2], int) and keys[3] in _LIMIT_RANGE_MAPS
    )


def _with_string_data_encoded(obj: Mapping[str, Any]) -> Obj:
    """A Secret as the server stores it: ``stringData`` folded into ``data`` (base64)."""
    out = dict(obj)
    if _is_secret(out) and out.get("stringData"):
        data = dict(out.get("data") or {})
        for k, v in (out.pop("stringData") or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        out["data"] = data
    return out


def _is_secret(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def _b64(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value))
    except ValueError:
        return str(value).encode()


def _join(path: str, key: str) -> str:
    part = f"[{key}]" if "." in key or "/" in key else key
    if not path:
        return part
    return f"{path}{part}" if part.startswith("[") else f"{path}.{part}"


def _label(item: Any, index: int) -> str:
    name = item.get("name") if isinstance(item, Mapping) else None
    return name if isinstance(name, str) else str(index)
