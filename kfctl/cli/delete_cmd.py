"""`kfctl delete`: the command-line face of kfctl.app.delete."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.cluster import open_cluster
from kfctl.app.delete import delete_kfdef
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import document, emit, machine_readable
from kfctl.cli.progress import Duration, EventRenderer, lock_timeout_option
from kfctl.cli.target import kfdef_target, resolve_kfdef


@click.command()
@kfdef_target
@click.option(
    "--delete-storage",
    is_flag=True,
    help="Also delete PersistentVolumeClaims/PVs (data is lost) and the generated Secrets that open their data.",
)
@click.option("--force", is_flag=True, help="Delete even from a cluster other than the one applied to.")
@click.option(
    "--force-namespaces",
    is_flag=True,
    help="Delete namespaces even when they hold objects kfctl did not apply (those are deleted with them).",
)
@click.option(
    "--delete-adopted",
    is_flag=True,
    help="Also delete objects kfctl adopted (apply --adopt) rather than created; kept by default.",
)
@click.option(
    "--wait-timeout",
    type=Duration(),
    default="5m",
    show_default=True,
    help="Limit for each phase's objects to be gone.",
)
@lock_timeout_option
@global_options
def delete(
    app_dir: Path | None,
    kfdef_file: Path | None,
    delete_storage: bool,
    force: bool,
    force_namespaces: bool,
    delete_adopted: bool,
    wait_timeout: float,
    lock_timeout: float,
) -> None:
    """Uninstall everything kfctl applied for this KfDef, in reverse dependency order.

    Webhooks and API services go first, custom resources while their controllers still run,
    then CRDs, workloads, RBAC, namespaces last; each phase waits until its objects are gone and
    names objects stuck on finalizers. PVCs (and the namespaces holding them, and the generated
    Secrets that open their data) stay unless --delete-storage; namespaces holding objects kfctl
    did not apply (named in the output) stay unless --force-namespaces; objects kfctl adopted
    rather than created (apply --adopt: a Helm release's, a namespace that existed before) stay
    unless --delete-adopted. Only objects still carrying kfctl's label and UID are touched.

    \b
    Examples:
      kfctl delete demo
      kfctl delete demo --delete-storage
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    with EventRenderer(opts, mode="delete") as renderer:
        s = delete_kfdef(
            kfdef,
            open_cluster=lambda: open_cluster(kubeconfig=opts.kubeconfig, context=opts.context),
            reporter=renderer,
            delete_storage=delete_storage,
            force=force,
            wait_timeout=wait_timeout,
            force_namespaces=force_namespaces,
            delete_adopted=delete_adopted,
            lock_timeout=lock_timeout,
        )
    if not s.found:
        text = f"Nothing to delete: no kfctl inventory for {kfdef.name} in namespace {kfdef.namespace}"
    else:
        text = f"Deleted {s.deleted} object(s) in {s.seconds:.1f}s"
        if s.kept:
            text += "\nKept:\n" + "\n".join(f"  {k}" for k in s.kept)
        if s.released:
            text += (
                f"\nReleased {len(s.released)} kept object(s): no longer labelled as this install's, so another "
                "install may use them; a reinstall of this KfDef takes them back, `kfctl delete --delete-storage` "
                "removes them"
            )
    if machine_readable(opts):
        click.echo(document(opts, {"summary": s.as_dict()}, stream=True))
    else:
        emit(opts, {}, text)
    if s.error is not None:
        raise s.error
