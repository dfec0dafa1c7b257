"""`kfctl init --upstream RELEASE`: scaffold upstream Kubeflow's full platform from the release's own example.

What people install when they install Kubeflow is ``example/kustomization.yaml`` of a kubeflow/manifests
release. This module fetches the release (a tag names GitHub's archive of it; a URL or a path is taken as
it is), through the mirrors and into APPDIR/.cache/repos/ as ``generate`` would, reads that file, and writes
a KfDef with one application per resource line, upstream's own comments kept beside each (they say what
each line is and which alternatives exist). No ``dependsOn`` is written: the install order is kfctl's to
infer. The repo is pinned by the lock on the first ``generate``. Never overwrites a KfDef without ``force``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kfctl.app.init import KFDEF_FILE, name_from_directory, new_kfdef_path, write_scaffold
from kfctl.config.model import Application, KfDef, Mirror, Repo
from kfctl.errors import ConfigError, FetchError, UsageError
from kfctl.repos.cache import CACHE_DIR, resolve_repos
from kfctl.repos.mirror import Mirrors
from kfctl.repos.source import ARCHIVE_SUFFIXES, is_archive

# The project was renamed kubeflow/community-distribution with release 26.03; GitHub still serves the archives
# under the old name, which is what users' mirrors map.
RELEASE_ARCHIVE = "https://github.com/kubeflow/manifests/archive/refs/tags/{tag}.tar.gz"
# Releases kfctl's tests scaffold, generate and install (../shared/fixtures); any other tag is fetched as well.
# Tags were v-prefixed up to v1.11.0 and are calendar versions without a `v` since 26.03.
KNOWN_RELEASES = ("v1.10.0", "v1.11.0", "26.03")
OFFLINE_WAYS = (
    "map the release to a mirror (--mirror https://github.com/=LOCATION) or give a local archive of it "
    "(--upstream ./manifests-26.03.tar.gz)"
)
EXAMPLE = "example/kustomization.yaml"
REPO_NAME = "manifests"
_TAG = re.compile(r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?([-.][0-9A-Za-z.-]+)?$")
_ENTRY = re.compile(r"^-\s+(?P<path>[^\s#]+)\s*(#\s?(?P<note>.*))?$")
_TOP_KEY = re.compile(r"^[A-Za-z]\w*:")
# Path segments that say nothing about what an application is; left out of its name.
_GENERIC = frozenset({"..", ".", "common", "applications", "apps", "upstream", "base", "overlays", "installs", "env"})


@dataclass(frozen=True)
class ExampleLine:
    path: str  # inside the release ("common/cert-manager/base")
    comments: tuple[str, ...]  # upstream's comment lines just above it (a section title, alternatives)
    note: str  # upstream's comment on the same line


@dataclass(frozen=True)
class Example:
    lines: tuple[ExampleLine, ...]
    components: tuple[str, ...]  # kustomize Components the example applies to everything


@dataclass(frozen=True)
class UpstreamInitResult:
    kfdef: Path
    release: str
    uri: str
    applications: tuple[str, ...]
    not_applied: tuple[str, ...]  # the example's components, which kfctl does not apply


def release_uris(release: str) -> tuple[str, ...]:
    """Where ``--upstream RELEASE`` is fetched from, the likeliest first. A tag names GitHub's archive of the
    release: as given, then in the other spelling (``v1.11.0`` / ``1.11.0``, ``26.03`` / ``v26.03``), since
    upstream's tags had a ``v`` until they became calendar versions. A URL is used as it is; a path must be a
    directory or an archive (it is read from the working directory)."""
    if _TAG.match(release):
        other = release[1:] if release.startswith("v") else f"v{release}"
        return RELEASE_ARCHIVE.format(tag=release), RELEASE_ARCHIVE.format(tag=other)
    if "://" in release:
        return (release,)
    path = Path(release).expanduser().resolve()
    if path.is_file() and not is_archive(path.name):
        raise UsageError(
            f"--upstream {release}: {path} is a file, not a release archive ({', '.join(ARCHIVE_SUFFIXES)}) "
            "or a directory",
            hint="give a release tag (v1.11.0, 26.03), the URL of a release archive, or a local archive or directory",
        )
    if not path.exists():
        raise UsageError(
            f"--upstream {release}: not a release tag (v1.11.0, 26.03), URL or path (there is no {path})",
            hint=f"kfctl fetches any kubeflow/manifests release by its tag; it is tested with "
            f"{', '.join(KNOWN_RELEASES)}. Or give a release archive's URL, or a local archive or directory",
        )
    return (str(path),)


def read_example(text: str) -> Example:
    """The resource lines (with the comments upstream wrote by them) and component lines of an example
    kustomization. Line-based, because the comments are the point; a path is taken relative to
    ``example/`` and made relative to the release's top."""
    lines: list[ExampleLine] = []
    components: list[str] = []
    section = ""
    pending: list[str] = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if _TOP_KEY.match(raw):
            section = raw.split(":", 1)[0]
            pending = []
            continue
        if section not in ("resources", "components") or not stripped:
            if not stripped:
                pending = []
            continue
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = _ENTRY.match(stripped)
        if match is None:
            continue
        path = _from_example(match["path"])
        if section == "resources":
            lines.append(ExampleLine(path, tuple(c for c in pending if c), (match["note"] or "").strip()))
        else:
            components.append(match["path"])
        pending = []
    return Example(tuple(lines), tuple(components))


def _from_example(entry: str) -> str:
    parts = [p for p in entry.split("/") if p not in ("", ".")]
    if parts and parts[0] == "..":
        return "/".join(parts[1:])
    return "/".join(["example", *parts])


def application_names(paths: list[str]) -> list[str]:
    """A DNS label per path, from its telling segments: common/istio/istio-crds/base -> istio-crds."""
    names: list[str] = []
    for path in paths:
        tokens: list[str] = []
        for segment in path.split("/"):
            if segment in _GENERIC:
                continue
            for token in re.split(r"[^a-z0-9]+", segment.lower()):
                if token and (not tokens or tokens[-1] != token):
                    tokens.append(token)
        base = ("-".join(tokens) or "app")[:60].strip("-")
        name, n = base, 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


def render_upstream_kfdef(
    example: Example,
    *,
    release: str,
    uri: str,
    name: str,
    namespace: str,
    platform: str,
    mirrors: tuple[Mirror, ...],
) -> str:
    paths = [line.path for line in example.lines]
    lines = [
        f"# Upstream Kubeflow {release}, the full platform: one application per resource line of the release's",
        f"# {EXAMPLE} (upstream installs it with `kustomize build example | kubectl apply`), upstream's",
        "# comments kept. kfctl infers the install order (CRDs, webhooks and their backends, namespaces,",
        "# certificates), so no dependsOn is needed. To leave a part out, delete its application's lines;",
        "# `kfctl plan` then names what else needed it. Written by `kfctl init --upstream`; the repo is pinned",
        "# in kfdef.lock by the first `kfctl generate`.",
    ]
    if example.components:
        lines += [
            "# Not applied: upstream's example also applies these kustomize Components to everything it",
            "# renders; kfctl renders each application on its own and does not apply them:",
            *(f"#   {c}" for c in example.components),
        ]
    lines += [
        "apiVersion: kfdef.apps.kubeflow.org/v1",
        "kind: KfDef",
        "metadata:",
        f"  name: {name}",
        f"  namespace: {namespace}  # where kfctl keeps its inventory of applied objects",
        "spec:",
        f"  platform: {platform}",
        "  repos:",
        f"    - name: {REPO_NAME}",
        f"      uri: {json.dumps(uri)}",
    ]
    if mirrors:
        lines.append("  mirrors:  # where remote repos and bases are fetched from instead")
        for mirror in mirrors:
            lines += [f"    - prefix: {json.dumps(mirror.prefix)}", f"      location: {json.dumps(mirror.location)}"]
    lines.append("  applications:")
    for entry, app_name in zip(example.lines, application_names(paths), strict=True):
        lines += [f"    # {comment}" for comment in entry.comments]
        note = f"  # {entry.note}" if entry.note else ""
        lines += [
            f"    - name: {app_name}{note}",
            "      kustomizeConfig:",
            f"        repoRef: {{name: {REPO_NAME}, path: {entry.path}}}",
        ]
    return "\n".join(lines) + "\n"


def init_upstream(
    *,
    app_dir: Path,
    release: str,
    namespace: str,
    platform: str,
    mirrors: tuple[Mirror, ...],
    force: bool,
) -> UpstreamInitResult:
    target = new_kfdef_path(app_dir, namespace=namespace, force=force)
    uris = release_uris(release)
    with _undone_on_failure(app_dir.joinpath(*CACHE_DIR)):
        uri, root = _fetch_release(app_dir, release, uris, mirrors)
        example_file = root / EXAMPLE
        if not example_file.is_file():
            raise ConfigError(
                f"--upstream {release}: {uri} holds no {EXAMPLE}, so it is not a kubeflow/manifests release",
                hint="name a release tag (e.g. v1.11.0, 26.03) or the archive of one",
            )
        example = read_example(example_file.read_text(encoding="utf-8"))
        if not example.lines:
            raise ConfigError(f"--upstream {release}: {example_file} lists no resources")
    label = _release_label(uri) if _TAG.match(release) else root.name  # an archive's top: manifests-1.10.0
    text = render_upstream_kfdef(
        example,
        release=label,
        uri=uri,
        name=name_from_directory(app_dir),
        namespace=namespace,
        platform=platform,
        mirrors=mirrors,
    )
    write_scaffold(target, text)
    names = application_names([line.path for line in example.lines])
    return UpstreamInitResult(target, label, uri, tuple(names), example.components)


def _release_label(uri: str) -> str:
    """The tag a release archive's URL names (the spelling that was found)."""
    return uri.rsplit("/", 1)[-1].removesuffix(".tar.gz")


def _fetch_release(app_dir: Path, release: str, uris: tuple[str, ...], mirrors: tuple[Mirror, ...]) -> tuple[str, Path]:
    """The first of ``uris`` that exists, fetched. A network failure stops at once (the next spelling would fail
    the same way); "not found" moves on, and when every spelling is missing the error names each."""
    missing: list[FetchError] = []
    for uri in uris:
        try:
            return uri, _fetch(app_dir, uri, mirrors)
        except FetchError as e:
            if not e.not_found or len(uris) == 1:
                raise FetchError(
                    e.message,
                    hint=f"check the network; without one, {OFFLINE_WAYS}",
                    details=e.details,
                    not_found=e.not_found,
                ) from e
            missing.append(e)
    tags = " nor ".join(_release_label(u) for u in uris)
    raise FetchError(
        f"--upstream {release}: neither tag {tags} was found",
        details=[e.message for e in missing],
        hint=f"check the tag (kfctl is tested with {', '.join(KNOWN_RELEASES)}); without network, {OFFLINE_WAYS}",
        not_found=True,
    )


@contextmanager
def _undone_on_failure(directory: Path) -> Iterator[None]:
    """A failed init leaves nothing behind: of ``directory`` and its parents (APPDIR/.cache/repos, .cache, APPDIR),
    the outermost one that did not exist before is removed again with what the fetch put in it. Nothing that was
    there before is touched."""
    made = [d for d in (directory, *directory.parents) if not d.exists()]
    try:
        yield
    except BaseException:
        if made:
            shutil.rmtree(made[-1], ignore_errors=True)
        raise


def _fetch(app_dir: Path, uri: str, mirrors: tuple[Mirror, ...]) -> Path:
    """The release's tree, fetched into APPDIR's repo cache as generate fetches it (no lock is written)."""
    repo = Repo(name=REPO_NAME, uri=uri)
    probe = Application(name="example", repo=repo, path="example", component=None)
    kfdef = KfDef(
        path=(app_dir / KFDEF_FILE).absolute(),
        api_version="kfdef.apps.kubeflow.org/v1",
        name="example",
        namespace="kubeflow",
        platform="generic",
        version="",
        applications=(probe,),
        repos=(repo,),
        plugins=(),
        mirrors=mirrors,
    )
    return resolve_repos(kfdef, mirrors=Mirrors.of(mirrors)).paths[REPO_NAME]
