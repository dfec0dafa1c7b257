"""`kfctl secrets`: the install's generated Secrets, for clusters a GitOps engine fills (kfctl.app.secrets)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import click

from kfctl.app.secrets import apply_secrets
from kfctl.catalog.load import load_catalog
from kfctl.cli.group import CommandGroup
from kfctl.cli.options import detailed_exitcode_option, get_options, global_options
from kfctl.cli.output import columns, emit, machine_readable
from kfctl.cli.progress import EventRenderer, lock_timeout_option
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.engine.events import EventLog
from kfctl.errors import Changed


@click.group(cls=CommandGroup)
def secrets() -> None:
    """The Secrets kfctl generates for an install (database passwords, object-store keys).

    The generated files (rendered/, kustomize/, vendor/, kfctl export) hold no Secret: kfctl apply
    creates each one in the cluster at the first apply, with random values, and never changes a
    value afterwards. For a cluster Argo CD or Flux fills from git, create them with
    `kfctl secrets apply`.

    \b
    Examples:
      kfctl secrets apply demo --context prod
      kfctl secrets apply -f demo/kfdef.yaml -o json
    """


@secrets.command("apply")
@kfdef_target
@lock_timeout_option
@detailed_exitcode_option
@global_options
def apply_cmd(app_dir: Path | None, kfdef_file: Path | None, lock_timeout: float, detailed_exitcode: bool) -> None:
    """Create the install's generated Secrets on the cluster, out of band (for GitOps).

    What kfctl apply does for them, alone: a missing Secret is created with random values, a
    missing key is added, an existing value is never changed, and a Secret that is not this
    install's is left alone. Secrets the KfDef brings instead (a ...SecretRef parameter) are checked
    (exit 5 when one is missing or lacks a key). Values are never printed. Needs the Secrets'
    namespace (sync the application that creates it first); no rendered files, no inventory.

    \b
    Examples:
      kfctl secrets apply demo --context prod
      kfctl secrets apply -f demo/kfdef.yaml -o json
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    with ExitStack() as stack:
        # -o json: one document (the result per Secret), for a pipeline to read; the events are for people.
        reporter = EventLog() if machine_readable(opts) else stack.enter_context(EventRenderer(opts))
        summary = apply_secrets(
            kfdef,
            load_catalog(),
            open_cluster=cluster_of(opts),
            reporter=reporter,
            lock_timeout=lock_timeout,
        )
    if summary.results:
        text = "\n".join(columns(["SECRET", "RESULT"], summary.rows(), align="ll"))
    else:
        text = f"{kfdef.name}: no application generates or brings a Secret"
    emit(opts, summary.as_dict(), text)
    if detailed_exitcode and summary.changed:
        opts.exit_code = Changed.exit_code
