"""`kfctl status`: health per application and per object, from the inventory."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.status import status_of
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit, shared_note
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.errors import HealthError


@click.command()
@kfdef_target
@click.option("--all", "show_all", is_flag=True, help="List ready objects too, not only the ones that are not.")
@global_options
def status(app_dir: Path | None, kfdef_file: Path | None, show_all: bool) -> None:
    """Show the health of every application and object kfctl applied (exit 8 if any is unhealthy).

    An object several applications render counts under each of them, once among the objects.

    \b
    Example:
      kfctl status demo --all
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    report = status_of(kfdef, load_catalog(), open_cluster=cluster_of(opts))
    if not report.applied:
        emit(opts, report.as_dict(), f"{kfdef.name} is not applied to this cluster (no inventory found)")
        return
    lines = ["APPLICATION            STATE        DETAIL"]
    for app, h in report.by_application().items():
        lines.append(f"{app:<22} {h.state:<12} {h.message}")
    if report.shared:
        lines.append(shared_note(report.shared))
    shown = [o for o in report.objects if show_all or not o.health.ready]
    if shown:
        lines.append("")
        lines.append("OBJECT" + " " * 60 + "STATE        DETAIL")
        for o in shown:
            lines.append(f"{o.key!s:<66} {o.health.state:<12} {o.health.message}")
    if report.secrets:
        lines.append("")
        lines.append("SECRET" + " " * 44 + "SOURCE     STATE        KEYS")
        for sec in report.secrets:
            lines.append(f"{sec.namespace + '/' + sec.name:<49} {sec.source:<10} {sec.state:<12} {sec.summary()}")
    emit(opts, report.as_dict(), "\n".join(lines))
    if not report.healthy:
        bad = sum(1 for o in report.objects if not o.health.ready)
        missing = [f"{s.namespace}/{s.name} {s.state}" for s in report.secrets if not s.ok]
        raise HealthError(f"{bad} object(s) are not healthy" + (f"; Secret(s) {', '.join(missing)}" if missing else ""))
