"""Mirrors: where the bytes of a URL come from when it should not (or cannot) be fetched from where it points.

A mirror maps a URL prefix to a location, as git's ``url.<base>.insteadOf`` and Go's ``GOPROXY`` do:
``https://github.com/=http://mirror.internal/github/`` makes ``https://github.com/org/repo`` come from
``http://mirror.internal/github/org/repo``. The location is another git or HTTP(S) base URL, a ``file://``
URL, or a local directory (a path, relative to the KfDef's directory). The longest matching prefix wins;
``--mirror`` flags come before the KfDef's ``spec.mirrors`` for the same prefix.

What is recorded (the lock file, the vendored tree's comments) is always the original URL: a mirror only
says where the bytes came from, so an app directory means the same thing wherever it was generated.
Pure string work; nothing is fetched here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kfctl.config.model import Mirror
from kfctl.errors import UsageError

FLAG_HINT = "write --mirror URL_PREFIX=LOCATION, e.g. --mirror https://github.com/=http://mirror.internal/github/"


@dataclass(frozen=True)
class Mapped:
    """Where ``original`` is fetched from: ``location`` is a URL, or a local path when ``local``."""

    original: str
    location: str
    local: bool
    mirror: Mirror | None = None

    def tried(self) -> str:
        """For error messages: what was asked of whom."""
        if self.mirror is None:
            return self.original
        return f"{self.location} ({self.mirror.describe()})"


__all__ = ["Mapped", "Mirror", "Mirrors", "is_url", "normalise", "parse_flag", "parse_flags"]


def is_url(text: str) -> bool:
    return "://" in text or text.startswith("git@")


def normalise(prefix: str, location: str, *, base_dir: Path) -> Mirror:
    """A mirror with its location made absolute (a relative path is taken from ``base_dir``)."""
    prefix, location = prefix.strip(), location.strip()
    if not prefix or not location:
        raise UsageError(
            f"mirror {prefix!r}={location!r}: both the URL prefix and the location are needed", hint=FLAG_HINT
        )
    if not is_url(location):
        path = Path(location).expanduser()
        location = str(path if path.is_absolute() else (base_dir / path).resolve())
    return Mirror(prefix=prefix, location=location)


def parse_flag(text: str, *, base_dir: Path) -> Mirror:
    """``URL_PREFIX=LOCATION`` from the command line. The first "=" followed by a URL, a "/", a "." or a "~"
    splits it, so a prefix holding "=" (a query) still parses: ``https://x/?a=b=/srv`` is prefix
    ``https://x/?a=b``; with none such, the first "=" does (``https://github.com/=mirror``)."""
    if "=" not in text:
        raise UsageError(f"--mirror {text!r}: expected URL_PREFIX=LOCATION", hint=FLAG_HINT)
    splits = [(text[:i], text[i + 1 :]) for i, c in enumerate(text) if c == "="]
    prefix, location = next(
        ((p, loc) for p, loc in splits if loc and (is_url(loc) or loc[0] in "/.~")),
        splits[0],
    )
    return normalise(prefix, location, base_dir=base_dir)


def parse_flags(texts: Iterable[str], *, base_dir: Path) -> tuple[Mirror, ...]:
    """Every ``--mirror`` of one command. A prefix given twice is refused here, where the user typed it: `init`
    would write both into ``spec.mirrors``, which the KfDef's own check then refuses at the next command."""
    mirrors: dict[str, Mirror] = {}
    for text in texts:
        mirror = parse_flag(text, base_dir=base_dir)
        if (first := mirrors.setdefault(mirror.prefix, mirror)) is not mirror:
            raise UsageError(
                f"--mirror {mirror.prefix} is given twice (={first.location} and ={mirror.location})",
                hint="give each URL prefix one --mirror; the longest matching prefix wins, so a longer one may "
                "point a part of it elsewhere",
            )
    return tuple(mirrors.values())


@dataclass(frozen=True)
class Mirrors:
    entries: tuple[Mirror, ...] = ()

    @staticmethod
    def of(*groups: Iterable[Mirror]) -> Mirrors:
        """Earlier groups win for the same prefix (the command line before the KfDef)."""
        seen: dict[str, Mirror] = {}
        for group in groups:
            for mirror in group:
                seen.setdefault(mirror.prefix, mirror)
        return Mirrors(tuple(seen.values()))

    def map(self, url: str) -> Mapped:
        best: Mirror | None = None
        for mirror in self.entries:
            if url.startswith(mirror.prefix) and (best is None or len(mirror.prefix) > len(best.prefix)):
                best = mirror
        if best is None:
            return Mapped(original=url, location=url, local=False)
        rest = url[len(best.prefix) :]
        if is_url(best.location):
            local = best.location.startswith("file://")
            return Mapped(original=url, location=_join(best.location, rest), local=local, mirror=best)
        return Mapped(original=url, location=str(Path(best.location) / rest.lstrip("/")), local=True, mirror=best)


def _join(base: str, rest: str) -> str:
    if base.endswith(("/", ":")) or rest.startswith("/") or not rest:
        return base + rest
    return f"{base}/{rest}"
