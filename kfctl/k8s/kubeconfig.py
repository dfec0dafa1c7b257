"""Which kubeconfig files to read, and their merge, by kubectl's rules.

kubectl's rules (client-go ``tools/clientcmd/loader.go``: ``NewDefaultClientConfigLoadingRules`` and
``ClientConfigLoadingRules.Load``; ``kubectl config view`` prints the result):

- ``--kubeconfig FILE`` means that one file, which must exist. Otherwise ``$KUBECONFIG`` is a list of files
  separated by ``os.pathsep`` (":", ";" on Windows) with empty entries and repeats dropped; unset or empty,
  it is ``~/.kube/config``.
- Files that do not exist are skipped; one that exists but cannot be parsed is an error.
- ``clusters``, ``users`` and ``contexts`` are maps by name: the first file to define a name wins, whole. A
  later file's entry of the same name is dropped even where it sets fields the first one lacks.
- ``current-context`` (like every other top-level value) comes from the first file that sets it.
- Relative paths in a cluster (``certificate-authority``) or a user (``client-certificate``, ``client-key``,
  ``tokenFile``, an ``exec`` command holding a path separator) resolve against the directory of the file
  that defined that entry (client-go's ``ResolveLocalPaths``).

The merged config holds absolute paths only, so the client library can be handed it as a dict. The
library's own merge is not used: it takes ``current-context`` from the *last* file that sets it and resolves
paths against the first file's directory only.

This module reads files and merges dicts; it makes no connection and does not interpret credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.errors import ClusterError

NAMED_LISTS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# The fields of each entry that name files, per named list (client-go GetClusterFileReferences and
# GetAuthInfoFileReferences). An exec command is resolved only when it is a path, not a name looked up on PATH.
FILE_FIELDS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}
MISSING_HINT = "pass --kubeconfig FILE or set KUBECONFIG to the cluster's kubeconfig"
# kubectl reads a kubeconfig of any size; one with every certificate inline is tens of KiB. Past this it is no
# kubeconfig (a disk image named by mistake), and kfctl reads no more of it.
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Kubeconfig:
    """The merged configuration and the files it was read from, in order."""

    config: dict[str, Any]
    files: tuple[str, ...]

    @property
    def source(self) -> str:
        """The files as one string for messages, written as KUBECONFIG would hold them."""
        return os.pathsep.join(self.files)


def kubeconfig_paths(kubeconfig: str | None, *, environ: Mapping[str, str], home: Path) -> list[str]:
    """The files kubectl reads: the flag's one file, else $KUBECONFIG's list, else ~/.kube/config."""
    if kubeconfig:
        return [kubeconfig]
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return list(dict.fromkeys(listed)) or [str(home / ".kube" / "config")]


def load_kubeconfig(paths: Sequence[str]) -> Kubeconfig:
    """Read and merge the files that exist; a ClusterError (exit 6) when none does or one is malformed."""
    found = [p for p in paths if os.path.exists(p)]
    if not found:
        what = (
            f"kubeconfig {paths[0]} does not exist"
            if len(paths) == 1
            else f"none of the kubeconfig files exists: {', '.join(paths)}"
        )
        raise ClusterError(what, hint=MISSING_HINT)
    merged: dict[str, Any] = {}
    for path in found:
        # client-go's filepath.Abs(filepath.Dir(file)): absolute, symbolic links left as they are.
        _merge(merged, _read(path), base=os.path.abspath(os.path.dirname(path)))
    return Kubeconfig(merged, tuple(found))


def _read(path: str) -> dict[str, Any]:
    try:
        # Within yamlio's limits, and a syntax error at file:line:column as the KfDef's; a key stated twice is
        # not refused, as client-go's decoder does not refuse it.
        doc = yamlio.load_lenient(yamlio.read_text(Path(path), max_bytes=MAX_BYTES))
    except OSError as e:
        raise _malformed(path, e.strerror or str(e)) from e
    except yaml.YAMLError as e:  # yamlio.InputError (not UTF-8, too large, too deep) among them
        raise _malformed_at(yamlio.describe(e, path)) from e
    if doc is None:
        return {}  # an empty file is an empty config to kubectl, not an error
    if not isinstance(doc, dict):
        raise _malformed(path, f"expected a mapping, got {type(doc).__name__}")
    for key, _ in NAMED_LISTS:
        entries = doc.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _malformed(path, f"{key}: expected a list, got {type(entries).__name__}")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
                raise _malformed(path, f"{key}[{i}]: expected an entry with a name")
    return doc


def _malformed(path: str, what: str) -> ClusterError:
    return _malformed_at(f"{path}: {what}")


def _malformed_at(where_what: str) -> ClusterError:
    """``where_what``: "file: problem" or "file:line:column: problem"."""
    return ClusterError(
        f"cannot load kubeconfig {where_what}",
        hint="check the file (kubectl config view --kubeconfig FILE shows what is wrong), or pass another",
    )


def _merge(merged: dict[str, Any], doc: Mapping[str, Any], *, base: str) -> None:
    """Add one file's config to what the files before it gave: their names and values win."""
    for key, value in doc.items():
        if key in {k for k, _ in NAMED_LISTS}:
            continue
        if merged.get(key) in (None, "", {}, []) and value not in (None, "", {}, []):
            merged[key] = value  # mergo's "first non-empty value wins", as for current-context
    for key, field in NAMED_LISTS:
        entries: list[dict[str, Any]] = merged.setdefault(key, [])
        known = {e["name"] for e in entries}
        for entry in doc.get(key) or []:
            if entry["name"] in known:
                continue
            known.add(entry["name"])
            entries.append(_resolved(key, field, entry, base))


def _resolved(key: str, field: str, entry: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A copy of the entry with its relative file paths made absolute against ``base``."""
    body = entry.get(field)
    if not isinstance(body, dict):
        return dict(entry)
    body = dict(body)
    for name in FILE_FIELDS.get(key, ()):
        if name in body:
            body[name] = _absolute(body[name], base)
    exec_ = body.get("exec")
    if key == "users" and isinstance(exec_, dict) and os.sep in str(exec_.get("command") or ""):
        body["exec"] = {**exec_, "command": _absolute(exec_["command"], base)}
    return {**entry, field: body}


def _absolute(value: Any, base: str) -> Any:
    """client-go's ResolvePaths: empty and absolute paths stay; others are joined to ``base`` (and cleaned)."""
    if not isinstance(value, str) or not value or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(base, value))
