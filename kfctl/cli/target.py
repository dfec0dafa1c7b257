"""Which KfDef a command works on: ``APPDIR`` (default ``.``) or ``-f FILE``, as kfctl v0.5 and v1 did; and which
cluster (:func:`cluster_of`)."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kfctl.app.cluster import open_cluster
from kfctl.app.init import KFDEF_FILE
from kfctl.catalog.load import load_catalog
from kfctl.cli.context import GlobalOptions
from kfctl.cli.options import get_options
from kfctl.config.loader import load_kfdef, load_kfdef_stream
from kfctl.config.model import KfDef
from kfctl.errors import UsageError
from kfctl.k8s.api import Cluster

F = TypeVar("F", bound=Callable[..., Any])


def kfdef_target(func: F) -> F:
    """Add the APPDIR argument and the -f/--file option to a command."""
    func = click.option(
        "-f",
        "--file",
        "kfdef_file",
        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
        default=None,
        help=f"The KfDef file (default: APPDIR/{KFDEF_FILE}; - reads stdin).",
    )(func)
    func = click.argument("app_dir", required=False, type=AppDir(file_okay=False, path_type=Path))(func)
    return func


class AppDir(click.Path):
    """APPDIR, which is a directory; a file given there is most likely the KfDef, so say how to pass one
    (``kfdef_flag``: the command takes -f). An empty one is refused: it is what an unset shell variable gives
    (`kfctl init "$APP"`), and taken as the current directory it would write, or apply, the wrong thing."""

    def __init__(self, *, kfdef_flag: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kfdef_flag = kfdef_flag

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "APPDIR"  # the README's and every help text's name, not click's APP_DIR

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "":
            raise UsageError(
                "APPDIR is empty: an unset variable?",
                hint="name the directory, or . for the current one",
            )
        if self.kfdef_flag and isinstance(value, (str, Path)) and _is_file(Path(value)):
            command = ctx.command_path if ctx is not None else "kfctl"
            self.fail(
                f"{value} is a file, and APPDIR is a directory; to use a KfDef file, pass it with -f: "
                f"{command} -f {value}",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def resolve_kfdef(app_dir: Path | None, kfdef_file: Path | None) -> KfDef:
    if kfdef_file is not None and _is_stream(kfdef_file):
        # `-f -` (kubectl's convention), /dev/stdin or a pipe: the KfDef comes from the stream, and its app dir
        # (what generate writes, what plan and diff compare with) is APPDIR, default the current directory; never
        # the stream's own directory (/dev).
        name = "<stdin>" if str(kfdef_file) == "-" else str(kfdef_file)
        with click.open_file(str(kfdef_file), "rb") as stream:
            kfdef = load_kfdef_stream(stream, name=name, app_dir=app_dir or Path("."), catalog=load_catalog())
    else:
        if app_dir is not None and kfdef_file is not None:
            raise UsageError("give either APPDIR or -f FILE, not both")
        path = kfdef_file if kfdef_file is not None else (app_dir or Path(".")) / KFDEF_FILE
        kfdef = load_kfdef(path, load_catalog())
    opts = get_options()
    if not opts.quiet:
        for note in kfdef.notes:  # stderr: stdout may be JSON, or a diagram
            click.echo(f"Note: {note}", err=True)
    return kfdef


def _is_stream(path: Path) -> bool:
    """`-`, a file that is no regular file (a pipe), or one in /dev or /proc (/dev/stdin, even when it leads to a
    regular file): read once, and no place to write beside."""
    if str(path) == "-" or path.absolute().parts[:2] in (("/", "dev"), ("/", "proc")):
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, say: click's own check reports it
        return False


def cluster_of(opts: GlobalOptions) -> Callable[[], Cluster]:
    """Opens the cluster --kubeconfig and --context name (kubectl's defaults otherwise), once the use case needs it:
    every command's one way there."""
    return lambda: open_cluster(kubeconfig=opts.kubeconfig, context=opts.context)
