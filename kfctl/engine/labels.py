"""The labels and annotations kfctl puts on what it applies, and the content hash that skips no-op writes.

The hash covers the object exactly as kfctl would send it (labels included, hash annotation excluded), so
any change in the rendered output, the kfctl app identity or the inventory id changes it. It cannot see
drift made by others in fields kfctl owns: the engine compares the live object for that
(:mod:`kfctl.engine.drift`); the hash only tells "the rendered content changed" (Configured) from "someone
changed the live object" (Corrected).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kfctl.objects import Obj, meta_of

PART_OF = "applyset.kubernetes.io/part-of"
APP_LABEL = "kfctl.kubeflow.org/app"  # the KfDef's name
APPLICATION_LABEL = "kfctl.kubeflow.org/application"  # the application inside it
HASH_ANNOTATION = "kfctl.kubeflow.org/applied-hash"
# On a Secret kfctl generates (kfctl.secrets): the keys it drew at random, and the PersistentVolumeClaim (same
# namespace) whose data the values open — delete and prune keep the Secret as long as they keep that claim.
GENERATED_ANNOTATION = "kfctl.kubeflow.org/generated-keys"
PROTECTS_ANNOTATION = "kfctl.kubeflow.org/protects-claim"
# On an object `kfctl delete` kept (a namespace holding a PVC, the PVC, its Secret): the ApplySet it was released
# from. Its ownership labels are gone, so another install may use it; this install takes it back on a reinstall
# and a later `delete --delete-storage` may still remove it.
RELEASED_ANNOTATION = "kfctl.kubeflow.org/released-from"


def content_hash(obj: Mapping[str, Any]) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def prepare(obj: Mapping[str, Any], *, applyset_id: str, kfdef_name: str, application: str) -> Obj:
    """The object as applied: our labels on it and its content hash in an annotation."""
    out: Obj = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    labels = meta.setdefault("labels", {}) or {}
    labels.update({PART_OF: applyset_id, APP_LABEL: kfdef_name, APPLICATION_LABEL: application})
    meta["labels"] = labels
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(HASH_ANNOTATION, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    digest = content_hash(out)
    meta["annotations"] = {**annotations, HASH_ANNOTATION: digest}
    return out


def applied_hash(live: Mapping[str, Any] | None) -> str | None:
    if not live:
        return None
    value = (meta_of(live).get("annotations") or {}).get(HASH_ANNOTATION)
    return str(value) if value else None


def desired_hash(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["annotations"][HASH_ANNOTATION])


def owned_by(live: Mapping[str, Any], applyset_id: str) -> bool:
    return (meta_of(live).get("labels") or {}).get(PART_OF) == applyset_id


def released_from(live: Mapping[str, Any]) -> str:
    """The ApplySet a kept object was released from ("" when it was not)."""
    return str((meta_of(live).get("annotations") or {}).get(RELEASED_ANNOTATION) or "")


def released(live: Mapping[str, Any], applyset_id: str) -> Obj:
    """``live`` without this install's ownership labels and hash, marked as released from ``applyset_id``."""
    out = copy.deepcopy(dict(live))
    meta = out.setdefault("metadata", {})
    meta["labels"] = {
        k: v for k, v in (meta.get("labels") or {}).items() if k not in (PART_OF, APP_LABEL, APPLICATION_LABEL)
    }
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HASH_ANNOTATION}
    meta["annotations"] = {**annotations, RELEASED_ANNOTATION: applyset_id}
    return out


def protected_claim(live: Mapping[str, Any]) -> str:
    """The PersistentVolumeClaim whose data a generated Secret's values open ("" for any other object)."""
    if live.get("kind") != "Secret":
        return ""
    return str((meta_of(live).get("annotations") or {}).get(PROTECTS_ANNOTATION) or "")
