"""Entry point: the click group, command registration, and the single place errors are printed."""

from __future__ import annotations

import importlib
import sys

import click

from kfctl import __version__
from kfctl.cli.context import GlobalOptions
from kfctl.cli.group import CommandGroup, interrupted
from kfctl.cli.options import GRAPH_OUTPUTS, TEXT_OUTPUTS, get_options, global_options, kubectl_dry_run, output_asked
from kfctl.cli.output import emit, emit_error, emit_unexpected
from kfctl.cli.signals import sigterm_unwinds
from kfctl.errors import InterruptedError_, KfctlError, UsageError

# Commands are imported when used: the cluster commands pull in the kubernetes client (about a second of
# imports), which `init`, `generate` and `--help` should not pay for.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("kfctl.cli.init_cmd", "init"),
    "catalog": ("kfctl.cli.catalog_cmd", "catalog"),
    "generate": ("kfctl.cli.generate_cmd", "generate"),
    "build": ("kfctl.cli.generate_cmd", "generate"),
    "export": ("kfctl.cli.export_cmd", "export_cmd"),
    "plan": ("kfctl.cli.plan_cmd", "plan"),
    "apply": ("kfctl.cli.apply_cmd", "apply"),
    "status": ("kfctl.cli.status_cmd", "status"),
    "diff": ("kfctl.cli.diff_cmd", "diff"),
    "delete": ("kfctl.cli.delete_cmd", "delete"),
    "check": ("kfctl.cli.check_cmd", "check"),
    "migrate": ("kfctl.cli.migrate_cmd", "migrate_cmd"),
    "secrets": ("kfctl.cli.secrets_cmd", "secrets"),
    "dashboard": ("kfctl.cli.dashboard_cmd", "dashboard"),
}


class LazyGroup(CommandGroup):
    """A group whose subcommands are imported on first use (click's documented lazy-loading pattern). Its -o
    takes every format: it is parsed before the command is known (kfctl.cli.options)."""

    outputs = TEXT_OUTPUTS + GRAPH_OUTPUTS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


HELP = """Install a machine-learning platform on Kubernetes from one KfDef file.

\b
Typical flow:
  kfctl init demo --platform kind     # scaffold demo/kfdef.yaml
  kfctl generate demo                 # render kustomize dirs + YAML (GitOps-ready)
  kfctl apply demo                    # install in dependency order, wait until healthy

Exit codes: 0 ok, 1 error, 2 usage, 3 config, 4 render, 5 plan, 6 cluster, 7 API denied,
8 health/timeout, 9 stale output, 10 fetch, 11 owned by someone else, 12 locked by another run,
13 check: warnings only, 14 check: a check failed, 15 changes (apply/diff --detailed-exitcode),
16 migrate --check: something would be dropped, 130 interrupted, 143 terminated.

\b
Shell completion: add this line to ~/.bashrc (zsh_source or fish_source for zsh or fish):
  eval "$(_KFCTL_COMPLETE=bash_source kfctl)"
"""


@click.group(
    cls=LazyGroup, help=HELP, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, "--version", prog_name="kfctl", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    ctx.ensure_object(GlobalOptions)


@cli.command()
@global_options
def version() -> None:
    """Print kfctl's version.

    \b
    Example:
      kfctl version -o json
    """
    emit(get_options(), {"version": __version__}, f"kfctl {__version__}")


def from_click(e: click.ClickException) -> KfctlError:
    """click's parse error as kfctl's: one style (`Error (usage error): …`), -o json and exit code 2 for all."""
    ctx = getattr(e, "ctx", None)
    hint = f"`{ctx.command_path} --help` shows the usage" if isinstance(ctx, click.Context) else None
    if isinstance(e, click.UsageError):
        return UsageError(e.format_message(), hint=hint)
    error = KfctlError(e.format_message(), hint=hint)  # a FileError: a file click was to open
    error.exit_code = e.exit_code
    return error


def _obeying_o(opts: GlobalOptions, args: list[str]) -> GlobalOptions:
    """click stops at the first bad word, maybe before it reached -o (`kfctl genrate -o json`): read -o from the
    words then."""
    if opts.output == "text":
        opts.output = output_asked(args) or "text"
    return opts


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and turn every outcome into an exit code; never let a traceback escape."""
    opts = GlobalOptions()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        with sigterm_unwinds():
            cli.main(args=kubectl_dry_run(args), prog_name="kfctl", standalone_mode=False, obj=opts)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.exceptions.NoArgsIsHelpError as e:  # `kfctl` alone: the help, as click prints it
        e.show()
        return 2
    except click.ClickException as e:
        error = from_click(e)
        emit_error(_obeying_o(opts, args), error)
        return error.exit_code
    except click.exceptions.Abort:
        emit_error(opts, InterruptedError_("interrupted"))
        return 130
    except KeyboardInterrupt as e:
        error = interrupted(e)
        emit_error(opts, error)
        return error.exit_code
    except KfctlError as e:
        emit_error(_obeying_o(opts, args), e)
        return e.exit_code
    except Exception as e:
        emit_unexpected(opts, e)
        return 1
    return opts.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
