"""`kfctl migrate`: read a kfctl v1 KfDef, write its catalog successor beside it (or where told).

The mapping itself is kfctl.migrate; this module owns the files. The input is never written. An existing
output is refused unless forced, before anything is computed, and written through a temp file so a
failure never leaves half a KfDef. With ``check`` nothing is written at all, nor for a KfDef that is already
on the catalog (what migrate or init wrote): there is nothing to migrate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.app.init import name_from_directory
from kfctl.catalog.model import Catalog
from kfctl.config.model import BUILTIN_REPO
from kfctl.errors import ConfigError, UsageError
from kfctl.fsutil import write_atomic
from kfctl.migrate.migrate import Migration, migrate, render

MIGRATED_SUFFIX = ".migrated.yaml"


@dataclass(frozen=True)
class MigrateResult:
    source: Path
    output: Path
    migration: Migration | None  # None: nothing to migrate (``already`` says why)
    written: bool  # False with check: the file that would be written is `output`
    already: str = ""  # why the input is already a catalog KfDef


def default_output(source: Path) -> Path:
    """kfctl_k8s_istio.v1.2.0.yaml → kfctl_k8s_istio.v1.2.0.migrated.yaml, beside it."""
    return source.with_name(source.stem + MIGRATED_SUFFIX)


def already_on_the_catalog(doc: Any) -> str:
    """Why ``doc`` is already a KfDef of this kfctl on its catalog ("" if it is not): it sets spec.platform,
    which no kfctl v1 KfDef had, and every repo it names is the catalog built into kfctl."""
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("platform"), str):
        return ""
    repos = spec.get("repos") or []
    if not isinstance(repos, list) or any(not isinstance(r, dict) or r.get("uri") != BUILTIN_REPO.uri for r in repos):
        return ""
    return f"platform {spec['platform']}, applications from {BUILTIN_REPO.uri}"


def migrate_file(source: Path, catalog: Catalog, *, output: Path | None, force: bool, check: bool) -> MigrateResult:
    target = output or default_output(source)
    doc = _read(source)
    already = already_on_the_catalog(doc)
    if already:  # app.migrated.yaml would become app.migrated.migrated.yaml, the same applications again
        return MigrateResult(source, target, None, written=False, already=already)
    if target.resolve() == source.resolve():
        raise UsageError(
            f"{target}: is the input; kfctl migrate never rewrites it",
            hint="name another file with --to, or leave --to out for " + default_output(source).name,
        )
    if not check:
        if target.is_dir():
            raise UsageError(f"{target}: is a directory; --to names the file to write")
        if target.exists() and not force:
            raise UsageError(
                f"{target}: already exists; left unchanged",
                hint="pass --force to overwrite it, or choose another file with --to",
            )
    try:
        migration = migrate(doc, catalog, default_name=name_from_directory(source.parent))
    except ConfigError as e:
        raise ConfigError(f"{source}: {e.message}", hint=e.hint) from e
    if check:
        return MigrateResult(source, target, migration, written=False)
    try:
        write_atomic(target, render(migration, source=str(source)))
    except OSError as e:
        raise UsageError(f"{target}: cannot write: {e.strerror or e}") from e
    return MigrateResult(source, target, migration, written=True)


def _read(source: Path) -> Any:
    try:
        return yamlio.safe_load(yamlio.read_text(source))
    except FileNotFoundError as e:
        raise ConfigError(f"{source}: no such file") from e
    except OSError as e:
        raise ConfigError(f"{source}: cannot read: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(yamlio.describe(e, str(source))) from e
