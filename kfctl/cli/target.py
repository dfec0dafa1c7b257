"""Which KfDef a command works on: ``APPDIR`` (default ``.``) or ``-f FILE``, as kfctl v0.5 and v1 did."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kfctl.app.init import KFDEF_FILE
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options
from kfctl.config.loader import load_kfdef
from kfctl.config.model import KfDef
from kfctl.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


def kfdef_target(func: F) -> F:
    """Add the APPDIR argument and the -f/--file option to a command."""
    func = click.option(
        "-f",
        "--file",
        "kfdef_file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help=f"The KfDef file (default: APPDIR/{KFDEF_FILE}).",
    )(func)
    func = click.argument("app_dir", required=False, type=click.Path(file_okay=False, path_type=Path))(func)
    return func


def resolve_kfdef(app_dir: Path | None, kfdef_file: Path | None) -> KfDef:
    if app_dir is not None and kfdef_file is not None:
        raise UsageError("give either APPDIR or -f FILE, not both")
    path = kfdef_file if kfdef_file is not None else (app_dir or Path(".")) / KFDEF_FILE
    kfdef = load_kfdef(path, load_catalog())
    opts = get_options()
    if not opts.quiet:
        for note in kfdef.notes:  # stderr: stdout may be JSON, or a diagram
            click.echo(f"Note: {note}", err=True)
    return kfdef
