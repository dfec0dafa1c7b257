"""`kfctl diff`: what `kfctl apply` would change (server-side dry run; exit 10 when nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kfctl.app.cluster import open_cluster
from kfctl.app.diff import diff_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit
from kfctl.cli.target import kfdef_target, resolve_kfdef
from kfctl.errors import EXIT_NO_CHANGES


@click.command()
@kfdef_target
@click.option("--skip-generate", is_flag=True, help="Compare APPDIR/rendered as it is, without rendering first.")
@global_options
def diff(app_dir: Path | None, kfdef_file: Path | None, skip_generate: bool) -> None:
    """Show what apply would create, change (as JSON patches) and prune. Secret values are masked.

    \b
    Exit codes: 0 differences found, 10 none.
    Example:
      kfctl diff demo
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    report = diff_kfdef(
        kfdef,
        load_catalog(),
        open_cluster=lambda: open_cluster(kubeconfig=opts.kubeconfig, context=opts.context),
        render=not skip_generate,
    )
    lines = []
    for d in report.diffs:
        sign = {"create": "+", "prune": "-", "update": "~"}[d.action]
        lines.append(f"{sign} {d.subject} ({d.action})")
        for op in d.patch:
            value = f" {json.dumps(op['value'], sort_keys=True)}" if "value" in op else ""
            lines.append(f"    {op['op']} {op['path']}{value}")
    lines.append(f"{len(report.diffs)} change(s), {report.unchanged} unchanged")
    emit(opts, report.as_dict(), "\n".join(lines))
    if not report.diffs:
        opts.exit_code = EXIT_NO_CHANGES
