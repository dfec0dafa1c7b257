"""Build a large plain application in pieces: kustomize's own cost grows with the square of the objects.

kustomize checks every resource it adds against all those already held (``resWrangler.Append``; upstream
kubernetes-sigs/kustomize#5084), so one build of 5,000 objects takes about 15 s where ten builds of 500
take 2 s. When an application's whole kustomization is *plain* — kfctl's wrapper adds nothing (no
parameters, overlays, images) and the repo's kustomization only lists YAML files under ``resources`` — its
build is just those documents, each normalised by kustomize, in kustomize's default ("legacy") order. Then
the documents are built in chunks (each by the real kustomize binary) and the chunks' documents merged in
that order: byte for byte what one ``kustomize build`` of ``APPDIR/kustomize/<app>`` prints (a component
test compares the two), in time linear in the objects. Anything else is built whole, as before.

This module decides and merges; :mod:`kfctl.render.kustomize` runs the builds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.errors import RenderError
from kfctl.objects import Obj, meta_of, parse_stream

# Below this many documents one build is fast enough (500 objects: 0.2 s); chunks of this size are built.
SPLIT_ABOVE = 1000
CHUNK = 500
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

# kustomize's legacy order (api/builtins SortOrderTransformer): these kinds first, in this order; these last;
# every other kind between them.
ORDER_FIRST = (
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_TYPE_ORDER = {k: i - len(ORDER_FIRST) for i, k in enumerate(ORDER_FIRST)} | {
    k: 1 + i for i, k in enumerate(ORDER_LAST)
}


_SEPARATOR = re.compile(r"^---\n", re.MULTILINE)  # between documents in kustomize's output


@dataclass(frozen=True)
class Pieces:
    """The documents of a plain application, in the order kustomize reads them."""

    documents: tuple[str, ...]

    def chunks(self) -> list[str]:
        return ["---\n".join(self.documents[i : i + CHUNK]) for i in range(0, len(self.documents), CHUNK)]


def plain_pieces(wrapper: Path, files: dict[str, str]) -> Pieces | None:
    """The documents to build in chunks, or None when the application must be built whole: its wrapper
    (``files``: kfctl's kustomize/<app>/ files, written in ``wrapper``) or the repo kustomization it points
    at does more than list files, a file is not plainly split into documents, or there are few documents."""
    if set(files) != {"kustomization.yaml"}:
        return None
    kustomization = _load(files["kustomization.yaml"])
    if kustomization is None or set(kustomization) != {"apiVersion", "kind", "resources"}:
        return None
    resources = kustomization["resources"]
    if not isinstance(resources, list) or len(resources) != 1 or not isinstance(resources[0], str):
        return None
    source = (wrapper / resources[0]).resolve()
    found = [source / name for name in KUSTOMIZATION_FILES if (source / name).is_file()]
    if len(found) != 1:
        return None
    inner = _load(found[0].read_text(encoding="utf-8"))
    if inner is None or not set(inner) <= {"apiVersion", "kind", "resources"}:
        return None
    entries = inner.get("resources") or []
    documents: list[str] = []
    for entry in entries if isinstance(entries, list) else [None]:
        path = (source / entry).resolve() if isinstance(entry, str) and "://" not in entry else None
        if path is None or not path.is_file() or not path.is_relative_to(source):
            return None  # a directory, a URL or a file elsewhere: kustomize may do more than read it
        docs = _documents(path.read_text(encoding="utf-8"))
        if docs is None:
            return None
        documents += docs
    return Pieces(tuple(documents)) if len(documents) > SPLIT_ABOVE else None


def _load(text: str) -> dict[str, Any] | None:
    try:
        data = yamlio.load_kustomization(text)
    except (yaml.YAMLError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _documents(text: str) -> list[str] | None:
    """The documents of a YAML stream split at its ``---`` lines; None when the stream uses directives,
    document-end markers or content on a ``---`` line (left to kustomize whole)."""
    docs: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if line.startswith(("%", "...")):
            return None
        if line.startswith("---"):
            if line.rstrip() != "---":
                return None
            docs.append([])
            continue
        docs[-1].append(line)
    out = []
    for doc in docs:
        body = "".join(doc)
        if body.strip():
            out.append(body if body.endswith("\n") else body + "\n")
    return out


def merge(outputs: Sequence[str], *, app: str) -> str:
    """The chunks' builds as one build would print them: every document, in kustomize's legacy order."""
    entries: list[tuple[Obj, str]] = []
    for text in outputs:
        docs = [d for d in _SEPARATOR.split(text) if d.strip()]
        objects = parse_stream(text, source=f"application {app}")
        if len(docs) != len(objects):  # a List kustomize did not flatten, or a separator inside a value
            raise _Unmergeable()
        entries += zip(objects, docs, strict=True)
    ids = {_id(obj)[0:1] + _id(obj)[2:] for obj, _ in entries}
    if len(ids) != len(entries):  # kustomize refuses an id twice: let the whole build say so, in its words
        raise _Unmergeable()
    entries.sort(key=functools.cmp_to_key(_legacy_compare))
    return "---\n".join(doc for _, doc in entries)


class _Unmergeable(Exception):
    """The chunks cannot be merged document by document: build the application whole."""


def build_in_chunks(pieces: Pieces, build: Callable[[str], str], *, app: str) -> str | None:
    """Each chunk through ``build`` (chunk text → kustomize output), merged; None when the application must
    be built whole: the chunks cannot be merged exactly, or one failed (the whole build then fails with
    kustomize's own message, naming the application's files rather than a chunk's)."""
    try:
        return merge([build(chunk) for chunk in pieces.chunks()], app=app)
    except (_Unmergeable, RenderError):
        return None


def _id(obj: Obj) -> tuple[str, str, str, str, str]:
    api = str(obj.get("apiVersion", ""))
    group, _, version = api.rpartition("/")
    meta = meta_of(obj)
    return group, version, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _gvk_string(group: str, version: str, kind: str) -> str:
    return "_".join((group or "~G", version or "~V", kind or "~K"))


def _legacy_compare(a: tuple[Obj, str], b: tuple[Obj, str]) -> int:
    """kustomize's legacy ``Less``: kind rank, then group_version_kind (core Namespaces before others), then
    namespace|name with ``~X``/``~N`` for none. Ids are unique, so it is a total order."""
    ga, va, ka, nsa, na = _id(a[0])
    gb, vb, kb, nsb, nb = _id(b[0])
    if (ga, va, ka) != (gb, vb, kb):
        ra, rb = _TYPE_ORDER.get(ka, 0), _TYPE_ORDER.get(kb, 0)
        if ra != rb:
            return -1 if ra < rb else 1
        sa, sb = _gvk_string(ga, va, ka), _gvk_string(gb, vb, kb)
        if ka == kb == "Namespace" and (ga == "" or gb == ""):
            sa, sb = sb, sa
        return -1 if sa < sb else 1 if sa > sb else 0
    sa, sb = f"{nsa or '~X'}|{na or '~N'}", f"{nsb or '~X'}|{nb or '~N'}"
    return -1 if sa < sb else 1 if sa > sb else 0
