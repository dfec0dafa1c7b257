"""The same object rendered by several applications: identical copies are applied once, different ones refused.

Upstream trees overlap (two applications may both carry the ``kubeflow`` Namespace or a shared ClusterRole).
Applying two copies would make the second application's content silently win, and delete or prune would
remove an object another application still needs. So copies that are equal after normalisation (empty
fields and ``status`` dropped, as the API server would) become one object, kept in the first application
that renders it; copies that differ are a RenderError naming both sources and the differing fields. Copies
that differ only in labels or annotations that do not contradict each other (one copy has a key the other
lacks) are one object with the union of both: kfctl v1 applied them one after the other, which left the
union, and kubeflow/manifests v1.2 relies on it (its `istio-system` and `cert-manager` Namespaces are rendered
by two applications with different labels).

This module only compares rendered objects; it reads no files and never talks to the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kfctl.errors import RenderError
from kfctl.objects import Obj, ObjectKey, key_of, meta_of

MAX_FIELDS = 8  # differing fields listed per object; the rest are counted


@dataclass(frozen=True)
class Copy:
    """An identical copy that was dropped: ``key`` is applied once, by ``kept_in``."""

    key: ObjectKey
    kept_in: str
    dropped_from: str
    merged: tuple[str, ...] = ()  # labels/annotations the dropped copy added to the kept one


def merge_copies(
    objects_by_app: Sequence[tuple[str, Sequence[Obj]]],
    *,
    sources: Mapping[str, str],
) -> tuple[tuple[tuple[str, tuple[Obj, ...]], ...], tuple[Copy, ...]]:
    """Each object once, in the first application that renders it; ``sources`` maps application → file.

    Raises RenderError listing every object whose copies differ.
    """
    first: dict[ObjectKey, tuple[str, Obj]] = {}
    out: list[tuple[str, tuple[Obj, ...]]] = []
    copies: list[Copy] = []
    conflicts: list[tuple[str, list[str]]] = []
    for app, objs in objects_by_app:
        kept: list[Obj] = []
        for obj in objs:
            key = key_of(obj)
            seen = first.get(key)
            if seen is None:
                first[key] = (app, obj)
                kept.append(obj)
                continue
            fields = differing_fields(normalise(seen[1]), normalise(obj))
            if not fields:
                copies.append(Copy(key, seen[0], app))
                continue
            added = merge_metadata(seen[1], obj, fields)
            if added is not None:
                copies.append(Copy(key, seen[0], app, added))
                continue
            where = (
                f"application {seen[0]} ({sources.get(seen[0], '?')}) and application {app} ({sources.get(app, '?')})"
            )
            conflicts.append((f"{key}: {where} render it differently", fields))
        out.append((app, tuple(kept)))
    if conflicts:
        raise _conflict_error(conflicts)
    return tuple(out), tuple(copies)


METADATA_MAPS = ("labels", "annotations")


def merge_metadata(kept: Obj, other: Obj, fields: Sequence[str]) -> tuple[str, ...] | None:
    """When the copies differ only in labels/annotations one of them lacks, add ``other``'s to ``kept`` (in
    place) and return the fields added; None when anything else differs or a key has two values."""
    added: dict[tuple[str, str], Any] = {}
    for f in fields:
        section, _, key = f.removeprefix("metadata.").partition(".")
        if not f.startswith("metadata.") or section not in METADATA_MAPS:
            return None
        ours = meta_of(kept).get(section) or {}
        theirs = meta_of(other).get(section) or {}
        # "metadata.labels": one copy has none at all; "metadata.labels.app": one copy lacks that key.
        for k in [key] if key else sorted(set(ours) | set(theirs)):
            if k in ours and k in theirs and ours[k] != theirs[k]:  # both set it, differently: a real conflict
                return None
            if k not in ours and k in theirs:
                added[(section, k)] = theirs[k]
    for (section, k), value in added.items():
        kept.setdefault("metadata", {}).setdefault(section, {})[k] = value
    return tuple(f"metadata.{section}.{k}" for section, k in added)


def normalise(value: Any, *, top: bool = True) -> Any:
    """The object as the API server would keep it: no nulls, no empty maps or lists, no ``status``."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if top and k == "status":
                continue
            n = normalise(v, top=False)
            if n not in (None, {}, []):
                out[str(k)] = n
        return out
    if isinstance(value, list):
        return [normalise(v, top=False) for v in value]
    return value


def differing_fields(a: Any, b: Any, path: str = "") -> list[str]:
    """Dotted paths (``spec.template.spec.containers[0].image``) where two normalised objects differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            out += differing_fields(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [f for i, (x, y) in enumerate(zip(a, b, strict=True)) for f in differing_fields(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "(the whole object)"]


def _conflict_error(conflicts: list[tuple[str, list[str]]]) -> RenderError:
    details: list[str] = []
    for header, fields in conflicts:
        shown = ", ".join(fields[:MAX_FIELDS]) + (
            f" and {len(fields) - MAX_FIELDS} more" if len(fields) > MAX_FIELDS else ""
        )
        details.append(f"{header}: {shown}")
    message = (
        details[0] if len(details) == 1 else f"{len(details)} objects are rendered differently by two applications"
    )
    return RenderError(
        message,
        details=details if len(details) > 1 else [],
        hint="keep one copy: remove it from one application (a `$patch: delete` patch in a kustomization of your"
        " own that wraps the upstream path) or make both copies the same",
    )
