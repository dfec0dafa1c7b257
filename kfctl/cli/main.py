"""Entry point: the click group, command registration, and the single place errors are printed."""

from __future__ import annotations

import sys

import click

from kfctl import __version__
from kfctl.cli.apply_cmd import apply
from kfctl.cli.catalog_cmd import catalog
from kfctl.cli.context import GlobalOptions
from kfctl.cli.delete_cmd import delete
from kfctl.cli.diff_cmd import diff
from kfctl.cli.export_cmd import export_cmd
from kfctl.cli.generate_cmd import generate
from kfctl.cli.init_cmd import init
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit, emit_error, emit_unexpected
from kfctl.cli.plan_cmd import plan
from kfctl.cli.status_cmd import status
from kfctl.errors import InterruptedError_, KfctlError

HELP = """Install a machine-learning platform on Kubernetes from one KfDef file.

\b
Typical flow:
  kfctl init demo --platform kind     # scaffold demo/kfdef.yaml
  kfctl generate demo                 # render kustomize dirs + YAML (GitOps-ready)
  kfctl apply demo                    # install in dependency order, wait until healthy

Exit codes: 0 ok, 1 error, 2 usage, 3 config, 4 render, 5 plan, 6 cluster, 7 API denied,
8 health/timeout, 9 stale output, 10 no changes, 130 interrupted.
"""


@click.group(help=HELP, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@global_options
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


cli.add_command(init)
cli.add_command(catalog)
cli.add_command(generate)
cli.add_command(generate, name="build")
cli.add_command(export_cmd)
cli.add_command(plan)
cli.add_command(apply)
cli.add_command(status)
cli.add_command(diff)
cli.add_command(delete)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and turn every outcome into an exit code; never let a traceback escape."""
    opts = GlobalOptions()
    try:
        cli.main(args=argv, prog_name="kfctl", standalone_mode=False, obj=opts)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        e.show()
        return 2
    except click.exceptions.Abort:
        emit_error(opts, InterruptedError_("interrupted"))
        return 130
    except KeyboardInterrupt:
        emit_error(opts, InterruptedError_("interrupted by the user"))
        return 130
    except KfctlError as e:
        emit_error(opts, e)
        return e.exit_code
    except Exception as e:
        emit_unexpected(opts, e)
        return 1
    return opts.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
