"""What apply's prune and delete may remove, each family of flags given to its command as one
:class:`~kfctl.engine.remove.RemoveOptions` (``prune`` for apply, ``removal`` for delete): neither the command
body nor the use case under it carries the flags loose."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from kfctl.app.delete import delete_options
from kfctl.cli.progress import Duration
from kfctl.engine.remove import RemoveOptions

F = TypeVar("F", bound=Callable[..., Any])


def prune_options(func: F) -> F:
    """apply's --no-prune, --prune-namespaces/-crds/-storage/-all, --force-namespaces and --prune-adopted, given as
    ``prune`` (None for --no-prune). Pruning waits as long as an object may take to be healthy: it reads the
    command's own --wait-timeout, which it leaves to the command."""

    @functools.wraps(func)
    def command(
        *args: Any,
        no_prune: bool,
        prune_namespaces: bool,
        prune_crds: bool,
        prune_storage: bool,
        prune_all: bool,
        force_namespaces: bool,
        prune_adopted: bool,
        **kwargs: Any,
    ) -> Any:
        kwargs["prune"] = (
            None
            if no_prune
            else RemoveOptions(
                namespaces=prune_namespaces or prune_all,
                crds=prune_crds or prune_all,
                storage=prune_storage or prune_all,
                wait_timeout=kwargs["wait_timeout"],
                force_namespaces=force_namespaces,
                adopted=prune_adopted,
            )
        )
        return func(*args, **kwargs)

    return _with_options(
        cast(F, command),
        click.option("--no-prune", is_flag=True, help="Do not delete objects that are no longer rendered."),
        click.option("--prune-namespaces", is_flag=True, help="Also prune Namespaces (and everything left in them)."),
        click.option("--prune-crds", is_flag=True, help="Also prune CRDs (deletes every object of their kinds)."),
        click.option("--prune-storage", is_flag=True, help="Also prune PersistentVolumeClaims and PersistentVolumes."),
        click.option("--prune-all", is_flag=True, help="Same as --prune-namespaces --prune-crds --prune-storage."),
        click.option(
            "--force-namespaces",
            is_flag=True,
            help="Prune namespaces that hold objects kfctl did not apply too (deleting those).",
        ),
        click.option("--prune-adopted", is_flag=True, help="Also prune objects kfctl adopted rather than created."),
    )


def uninstall_options(func: F) -> F:
    """delete's --delete-storage, --force-namespaces, --delete-adopted and --wait-timeout, given as ``removal``:
    what delete removes and how long it waits (:func:`kfctl.app.delete.delete_options`)."""

    @functools.wraps(func)
    def command(
        *args: Any,
        delete_storage: bool,
        force_namespaces: bool,
        delete_adopted: bool,
        wait_timeout: float,
        **kwargs: Any,
    ) -> Any:
        kwargs["removal"] = delete_options(
            delete_storage=delete_storage,
            force_namespaces=force_namespaces,
            delete_adopted=delete_adopted,
            wait_timeout=wait_timeout,
        )
        return func(*args, **kwargs)

    return _with_options(
        cast(F, command),
        click.option(
            "--delete-storage",
            is_flag=True,
            help=(
                "Also delete PersistentVolumeClaims/PVs (data is lost) and the generated Secrets that open their data."
            ),
        ),
        click.option(
            "--force-namespaces",
            is_flag=True,
            help="Delete namespaces even when they hold objects kfctl did not apply (those are deleted with them).",
        ),
        click.option(
            "--delete-adopted",
            is_flag=True,
            help="Also delete objects kfctl adopted (apply --adopt) rather than created; kept by default.",
        ),
        click.option(
            "--wait-timeout",
            type=Duration(),
            default="5m",
            show_default=True,
            help="Limit for each phase's objects to be gone.",
        ),
    )


def _with_options(command: F, *options: Callable[[F], F]) -> F:
    """``command`` with ``options``, listed in --help in the order given."""
    for option in reversed(options):
        command = option(command)
    return command
