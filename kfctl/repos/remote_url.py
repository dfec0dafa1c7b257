"""What a remote kustomize reference names: a git repository (with a path inside it and a ref) or a plain file.

kustomize accepts several spellings for a remote base (``https://host/org/repo//path?ref=v1``,
``https://github.com/org/repo/path?ref=v1``, ``github.com/org/repo/path``, ``git@host:org/repo.git/path``,
``ssh://git@host/org/repo``, ``git::https://…``, ``gh:org/repo``) and a plain ``https://…/file.yaml``. This
module turns each into the URL git clones (or the URL of the file), the path inside the repository and the
ref, the way kustomize's own parser splits them:

- ``//`` after the host separates the repository from the path;
- else a ``.git`` suffix ends the repository, and ``_git/<name>`` (Azure DevOps) names it;
- else the first two path segments are ``org/repo``.

A URL is a *file* when it is http(s), has no ``ref``/``version`` query and no ``//``, and its last segment
ends in ``.yaml``, ``.yml`` or ``.json`` (kustomize tries such a URL as a file first). Pure string work: it
never touches the network or the disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from kfctl.errors import ConfigError

FILE_SUFFIXES = (".yaml", ".yml", ".json")
_SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<rest>.*)$")
_TIMEOUT = re.compile(r"^(?P<n>[0-9]+(\.[0-9]+)?)(?P<unit>s|m)?$")


@dataclass(frozen=True)
class RemoteSpec:
    """One remote reference, parsed. ``repo`` is what is fetched (git: the clone URL; file: the file's URL)."""

    url: str  # exactly as the kustomization wrote it
    kind: Literal["git", "file"]
    repo: str
    path: str = ""  # git: the directory inside the repository ("" = its top)
    ref: str | None = None  # git: tag, branch or commit; None = the remote's default branch
    timeout: float | None = None  # kustomize's ?timeout= (seconds), when given

    @property
    def slug(self) -> str:
        """A relative directory name for the vendored copy, readable and free of URL syntax:
        ``github.com/argoproj/argo-workflows`` for both ``https://github.com/argoproj/argo-workflows`` and
        ``git@github.com:argoproj/argo-workflows.git``."""
        text = self.repo
        for prefix in ("https://", "http://", "ssh://", "file://"):
            if text.startswith(prefix):
                text = text[len(prefix) :]
                break
        match = _SCP.match(text)
        if match:
            text = f"{match['host']}/{match['rest']}"
        text = text.split("@", 1)[-1] if "@" in text.split("/", 1)[0] else text  # a user in ssh://user@host
        if text.endswith(".git"):
            text = text[: -len(".git")]
        parts = [re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in text.split("/") if p not in ("", ".", "..")]
        return "/".join(parts) or "remote"


def parse_remote(url: str) -> RemoteSpec:
    """Parse ``url`` (a ``resources``/``bases``/``components`` entry kustomize would fetch); ConfigError if it
    names no repository kfctl can fetch."""
    text = url.strip()
    if text.lower().startswith("git::"):
        text = text[len("git::") :]
    if text.startswith("gh:"):
        text = "https://github.com/" + text[len("gh:") :]
    body, query = _split_query(text)
    params = parse_qs(query)
    refs = params.get("ref") or params.get("version") or []
    ref = refs[0] if refs else None
    timeout = _timeout(next(iter(params.get("timeout") or []), None))
    scheme = urlsplit(body).scheme if "://" in body else ""
    if scheme in ("http", "https") and ref is None and "//" not in body[len(scheme) + 3 :]:
        last = body.rstrip("/").rsplit("/", 1)[-1].lower()
        if last.endswith(FILE_SUFFIXES):
            return RemoteSpec(url=url, kind="file", repo=body, timeout=timeout)
    host, rest = _host(body, url)
    repo_part, path = _repo_and_path(rest, url)
    return RemoteSpec(url=url, kind="git", repo=host + repo_part, path=path.strip("/"), ref=ref, timeout=timeout)


def _split_query(text: str) -> tuple[str, str]:
    body, _, query = text.partition("?")
    return body, query


def _timeout(value: str | None) -> float | None:
    """kustomize's ``timeout``: whole seconds ("61") or a duration ("61s", "2m"); anything else is ignored,
    as kustomize ignores it."""
    if not value:
        return None
    match = _TIMEOUT.match(value.strip())
    if not match:
        return None
    seconds = float(match["n"]) * (60 if match["unit"] == "m" else 1)
    return seconds if seconds > 0 else None


def _host(body: str, url: str) -> tuple[str, str]:
    """The clone URL's host part (with scheme and a trailing "/" or ":") and the rest."""
    for scheme in ("https://", "http://", "ssh://", "file://"):
        if body.lower().startswith(scheme):
            after = body[len(scheme) :]
            if scheme == "file://":
                return scheme, after
            host, sep, rest = after.partition("/")
            if not host or not sep:
                raise _unparsable(url, "no repository after the host")
            return f"{scheme}{host}/", rest
    match = _SCP.match(body)
    if match:
        return f"{match['user']}@{match['host']}:", match["rest"]
    host, sep, rest = body.partition("/")
    if "." in host and sep:  # github.com/org/repo: kustomize takes it for https
        return f"https://{host}/", rest
    raise _unparsable(url, "not a URL kustomize fetches (no scheme, no host)")


def _repo_and_path(rest: str, url: str) -> tuple[str, str]:
    if "//" in rest:
        repo, _, path = rest.partition("//")
        return _nonempty(repo, url), path
    index = rest.find(".git/")
    if rest.endswith(".git") or index >= 0:
        end = len(rest) if index < 0 else index + len(".git")
        return _nonempty(rest[:end], url), rest[end:]
    if "_git/" in rest:
        head, _, tail = rest.partition("_git/")
        name, _, path = tail.partition("/")
        return _nonempty(f"{head}_git/{name}", url), path
    segments = rest.split("/")
    if len(segments) < 2 or not segments[0] or not segments[1]:
        raise _unparsable(url, "expected org/repo after the host")
    return "/".join(segments[:2]), "/".join(segments[2:])


def _nonempty(repo: str, url: str) -> str:
    if not repo.strip("/"):
        raise _unparsable(url, "no repository before the path")
    return repo


def _unparsable(url: str, why: str) -> ConfigError:
    return ConfigError(
        f"remote base {url!r}: {why}",
        hint="write it as kustomize does: https://host/org/repo//path?ref=TAG, or https://host/…/file.yaml",
    )
