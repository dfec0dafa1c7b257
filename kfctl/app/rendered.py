"""APPDIR/rendered/<app>.yaml read back into objects: parsed once per content, then taken from a JSON copy.

Every cluster command starts by reading the rendered files: 8.5 MB of YAML for the full catalog (312 objects,
mostly CRDs), about 0.8 s even with libyaml's C loader and most of a no-op apply's own CPU time, where the same
objects load from JSON in 0.02 s. So each file's objects are kept in ``APPDIR/.cache/rendered/<app>.json``
(beside the render cache; ``.cache/`` is git-ignored) with the sha256 of the text they were parsed from: a copy
is used only for that very text, so it is never stale, and there is one entry per application. Only objects
JSON carries exactly are kept (no YAML timestamps, binary or non-string keys), and none of a text that defines
a YAML anchor (an alias shares one object between two places; a JSON copy would not). A cache file that cannot
be read or does not hold what it should is ignored and written anew; writes are atomic and best effort.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kfctl import yamlio
from kfctl.fsutil import write_atomic
from kfctl.objects import Obj, parse_stream

CACHE_DIR = Path(".cache") / "rendered"
FORMAT = 1  # bump when parse_stream's result for the same text changes


def read_objects(path: Path, *, app: str, cache: Path | None, keep: bool = True) -> list[Obj]:
    """The objects of rendered file ``path`` of application ``app``, as ``parse_stream`` gives them; ``cache``:
    the directory of parsed copies (None: parse every time), where a missing copy is written only with ``keep``
    (a command that only reads uses the copies but writes none)."""
    text = path.read_text(encoding="utf-8")
    key = _digest(text)
    if cache is not None:
        hit = _get(cache / f"{app}.json", key)
        if hit is not None:
            return hit
    objects = parse_stream(text, source=str(path))
    if cache is not None and keep:
        remember(cache, app=app, text=text, objects=objects)
    return objects


def remember(cache: Path, *, app: str, text: str, objects: list[Obj]) -> None:
    """Keep ``objects`` (``parse_stream(text)``) as the parsed copy of application ``app``'s rendered text."""
    if yamlio.may_alias(text):
        return
    try:
        data = json.dumps({"key": _digest(text), "objects": objects})
        if json.loads(data)["objects"] != objects:
            return  # something JSON does not carry exactly (a NaN, a non-string key): parse it every time
        write_atomic(cache / f"{app}.json", data)
    except (OSError, TypeError, ValueError):
        pass  # a cache that cannot be written only makes the next run slower


def _get(path: Path, key: str) -> list[Obj] | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, cut short, not UTF-8: parse the YAML instead
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    objects = entry.get("objects")
    if not isinstance(objects, list) or not all(
        isinstance(o, dict) and "apiVersion" in o and "kind" in o for o in objects
    ):
        return None
    return objects


def _digest(text: str) -> str:
    h = hashlib.sha256(f"kfctl rendered objects {FORMAT}\0".encode())
    h.update(text.encode("utf-8"))
    return h.hexdigest()
