"""Kubernetes objects as plain dicts, and the key kfctl identifies them by.

Objects are keyed by (group, kind, namespace, name) and never by version: the same object served at two
versions is one object. This module parses YAML streams into objects; it does no I/O and no API calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.errors import RenderError

Obj = dict[str, Any]


@dataclass(frozen=True, order=True)
class ObjectKey:
    """The identity of an object: group, kind, namespace ("" when cluster-scoped), name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind} {where}{self.name}"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: "apps/v1" → "apps", "v1" → ""."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def identity(obj: Mapping[str, Any]) -> dict[str, str]:
    """What names an object for a program (``-o json``): group, version, kind, namespace ("" when cluster-scoped)
    and name, each its own field, so no reader parses kfctl's ``Kind.group namespace/name`` display."""
    return key_fields(key_of(obj), str(obj.get("apiVersion", "")))


def key_fields(key: ObjectKey, api_version: str) -> dict[str, str]:
    """:func:`identity` of the object ``key`` names, served at ``api_version`` ("" when unknown)."""
    version = api_version.rsplit("/", 1)[-1]
    return {"group": key.group, "version": version, "kind": key.kind, "namespace": key.namespace, "name": key.name}


def meta_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object's ``metadata`` (the mapping itself, so a change to it changes the object), or ``{}`` when it has
    none: the one spelling of ``(obj.get("metadata") or {})``."""
    value = (obj or {}).get("metadata")
    return value if isinstance(value, dict) else {}


def key_of(obj: Mapping[str, Any]) -> ObjectKey:
    meta = meta_of(obj)
    return ObjectKey(
        group=group_of(str(obj.get("apiVersion", ""))),
        kind=str(obj.get("kind", "")),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name", "")),
    )


def parse_stream(text: str, *, source: str) -> list[Obj]:
    """Parse a multi-document YAML stream into objects, flattening ``*List`` kinds.

    Raises RenderError naming ``source`` when the stream is not YAML, its aliases expand past
    ``yamlio.MAX_NODES`` nodes, or a document is not an object.
    """
    try:
        docs = yamlio.safe_load_all(text)
    except yamlio.InputError as e:  # aliases that expand past yamlio.MAX_NODES
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1} of the output" if mark else "the output"
        raise RenderError(f"{source}: {where}: {e.problem}") from e
    except yaml.YAMLError as e:
        raise RenderError(f"{source}: output is not valid YAML: {e}") from e
    objects: list[Obj] = []
    for doc in _flatten(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise RenderError(f"{source}: a document is not a Kubernetes object (no apiVersion/kind)")
        objects.append(doc)
    return objects


def _flatten(docs: Iterable[Any]) -> Iterable[Any]:
    for doc in docs:
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            yield from _flatten(doc.get("items") or [])
        else:
            yield doc
