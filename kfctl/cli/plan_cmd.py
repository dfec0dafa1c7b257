"""`kfctl plan`: print the apply order and the reason for every wait."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.plan import plan_as_dict, plan_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit
from kfctl.cli.target import kfdef_target, resolve_kfdef
from kfctl.plan.text import format_plan


@click.command()
@kfdef_target
@click.option("--skip-generate", is_flag=True, help="Plan APPDIR/rendered as it is, without rendering first.")
@global_options
def plan(app_dir: Path | None, kfdef_file: Path | None, skip_generate: bool) -> None:
    """Print the dependency plan: waves of objects and what each waits for, and why. Offline.

    \b
    Example:
      kfctl plan demo
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    p = plan_kfdef(kfdef, load_catalog(), render=not skip_generate)
    emit(opts, plan_as_dict(p), format_plan(p))
