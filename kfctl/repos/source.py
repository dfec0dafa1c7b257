"""Where a ``spec.repos[].uri`` is: kfctl.config.repouri's judgement of its kind, with a local path made absolute
against the KfDef's directory. Pure string work on the KfDef's values; it must not touch the network or the
disk beyond making relative paths absolute.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kfctl.config.model import Repo
from kfctl.config.repouri import ARCHIVE_SUFFIXES, SourceKind, UriProblem, is_archive, uri_kind
from kfctl.errors import ConfigError

__all__ = ["ARCHIVE_SUFFIXES", "Source", "classify", "is_archive"]  # the first and last for kfctl.app.init_upstream


@dataclass(frozen=True)
class Source:
    """A repo's location, normalised. ``location`` is a Path for local things, a URL string otherwise."""

    repo: Repo
    kind: SourceKind
    location: str  # absolute path (directory, local archive/git) or URL
    local: bool  # no network needed to read it

    @property
    def where(self) -> str:
        return f'repo "{self.repo.name}" ({self.repo.uri})'


def classify(repo: Repo, base_dir: Path, *, kfdef_path: Path) -> Source:
    """Classify ``repo.uri`` (kfctl.config.repouri); relative paths are taken relative to ``base_dir`` (the
    KfDef's directory)."""
    try:
        found = uri_kind(repo.uri, ref=repo.ref, sha256=repo.sha256)
    except UriProblem as e:
        raise ConfigError(f'{kfdef_path}: repo "{repo.name}": {e.message}', hint=e.hint) from e
    location = str(_local_path(found.location, base_dir)) if found.path else found.location
    return Source(repo=repo, kind=found.kind, location=location, local=found.local)


def _local_path(text: str, base_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base_dir / path
