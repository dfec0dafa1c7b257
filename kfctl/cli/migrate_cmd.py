"""`kfctl migrate`: the command-line face of kfctl.app.migrate — the mapping table, then the file written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kfctl.app.migrate import MigrateResult, migrate_file
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import columns, emit
from kfctl.config.model import BUILTIN_REPO
from kfctl.errors import MigrationDropped
from kfctl.migrate.migrate import AppMapping, Setting, describe, replaced_repo_lines


@click.command("migrate")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--to",
    "to",
    metavar="NEWFILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the migrated KfDef here (default: beside FILE, named <FILE stem>.migrated.yaml). Not -o: "
    "-o/--output is every command's output format (-o json).",
)
@click.option("--force", is_flag=True, help="Overwrite NEWFILE if it exists.")
@click.option(
    "--check",
    is_flag=True,
    help=f"Write nothing; exit {MigrationDropped.exit_code} if an application, a part of a stack or a setting would "
    "be dropped, 0 if everything has a place in the catalog.",
)
@global_options
def migrate_cmd(file: Path, to: Path | None, force: bool, check: bool) -> None:
    """Rewrite a KfDef of kfctl v1.0 to v1.2 for the catalog built into kfctl.

    Each v1 application becomes its catalog successor (tf-job-operator and pytorch-operator:
    training-operator; kfserving: kserve; the katib, pipeline and jupyter pieces: katib, pipelines,
    notebook-controller; the kubeflow-apps stack: the components it held), each component once, with
    the components they need added. Parameters go where the catalog has an equivalent. What has no
    successor (istio, knative, dex, spartakus, profiles, the dashboard, ...) is listed with the reason,
    in the output and as comments at the top of the new file. The platform comes from the v1 plugin
    (KfGcpPlugin: gcp, KfAwsPlugin: aws; none: generic); metadata.name, when missing, from FILE's
    directory, as kfctl v1 named installs.

    FILE is never rewritten, and NEWFILE only with --force.

    \b
    Examples:
      kfctl migrate kf/kfctl_k8s_istio.v1.2.0.yaml      # writes kf/kfctl_k8s_istio.v1.2.0.migrated.yaml
      kfctl migrate kf/app.yaml --to kf/kfdef.yaml && kfctl generate kf
      kfctl migrate kf/app.yaml --check -o json        # CI: exit 16 if anything would be dropped
    """
    opts = get_options()
    result = migrate_file(file, load_catalog(), output=to, force=force, check=check)
    if result.migration is None:
        text = f"{file}: already a catalog KfDef ({result.already}); nothing to migrate"
        emit(opts, {"source": str(file), "written": False, "alreadyMigrated": result.already}, text, quiet="")
        return
    emit(opts, _data(result), "\n".join(_text(result)), quiet="")  # -q: the result is the file
    if check and result.migration.dropped:
        opts.exit_code = MigrationDropped.exit_code


def _target(a: AppMapping) -> str:
    if a.dropped:
        return f"dropped: {a.dropped}"
    if a.kept:
        return f"kept: {a.note}"
    return ", ".join(a.components) + (f" ({a.note})" if a.note else "")


def _setting_lines(settings: tuple[Setting, ...]) -> list[str]:
    """Carried and dropped settings one by one; the ones not needed grouped, since every v1.0 application
    had overlay "application" and the same line sixteen times says nothing more."""
    lines: list[str] = []
    unneeded: dict[tuple[str, str, str, str], list[str]] = {}
    for s in settings:
        value = f"={s.value}" if s.value else ""
        if s.outcome == "not needed":
            unneeded.setdefault((s.kind, s.name, value, s.reason), []).append(s.source)
        else:
            where = f"{s.target}{f' ({s.reason})' if s.reason else ''}" if s.outcome == "carried" else s.reason
            lines.append(f"  {describe(s)} -> {s.outcome}: {where}")
    for (kind, name, value, reason), sources in unneeded.items():
        lines.append(f"  {kind} {name}{value} of {', '.join(sources)} -> not needed: {reason}")
    return lines


def _text(result: MigrateResult) -> list[str]:
    m = result.migration
    assert m is not None
    lines = [f"Platform {m.platform} ({m.platform_from})."]
    if m.name_from_directory:
        lines.append(
            f"metadata.name is not set in {result.source}: named {m.name!r} after its directory, as kfctl v1 "
            "named installs."
        )
    rows: list[tuple[str, str]] = []
    for a in m.applications:
        rows.append((a.name, _target(a)))
        rows += [(f"  {p.path}", f"dropped: {p.dropped}" if p.dropped else ", ".join(p.components)) for p in a.parts]
    lines += ["", *columns(("LEGACY APPLICATION", "CATALOG COMPONENT"), rows, align="ll")]
    if m.added:
        lines.append(f"Added (needed by the others): {', '.join(m.added)}")
    lines += replaced_repo_lines(m)
    if m.settings:
        lines += ["", "Settings:", *_setting_lines(m.settings)]
    if m.unset:
        lines += ["", f"Set in the plugin spec before `kfctl generate` (platform {m.platform}):"]
        lines += [f"  {u}" for u in m.unset]
    lines.append("")
    applications = f"{len(m.written)} application(s): {', '.join(m.written)}"
    if result.written:
        lines.append(f"Wrote {result.output}: {applications}")
        lines.append(f"Next: kfctl generate -f {result.output}")
    else:
        verdict = "something would be dropped" if m.dropped else "nothing would be dropped"
        lines.append(f"Checked (--check, nothing written: {verdict}); {result.output} would hold {applications}")
    return lines


def _absent(text: str) -> str | None:
    """An absent value is null in -o json, never "" (one convention for every field: dropped, note, reason …)."""
    return text or None


def _data(result: MigrateResult) -> dict[str, Any]:
    m = result.migration
    assert m is not None
    return {
        "source": str(result.source),
        "output": str(result.output),
        "written": result.written,
        "name": m.name,
        "nameFromDirectory": m.name_from_directory,
        "namespace": m.namespace,
        "platform": m.platform,
        "platformFrom": m.platform_from,
        "applications": [
            {
                "name": a.name,
                "path": _absent(a.path),
                "components": list(a.components),
                "dropped": a.dropped,
                "kept": a.kept,
                "note": _absent(a.note),
                "parts": [{"path": p.path, "components": list(p.components), "dropped": p.dropped} for p in a.parts],
            }
            for a in m.applications
        ],
        "components": list(m.components),
        "writtenApplications": list(m.written),  # the catalog's, then those kept from your own repos
        "addedDependencies": list(m.added),
        "replacedRepos": [{"name": name, "uri": uri, "by": BUILTIN_REPO.uri} for name, uri in m.replaced_repos],
        "settings": [
            {
                "source": s.source,
                "kind": s.kind,
                "name": s.name,
                "value": _absent(s.value),
                "outcome": s.outcome,
                "target": _absent(s.target),
                "reason": _absent(s.reason),
            }
            for s in m.settings
        ],
        "unsetPlatformParameters": list(m.unset),
        "dropped": m.dropped,
    }
