"""Shell completion of the catalog's names (click's ``shell_complete`` callbacks): platforms for
``--platform``, components for each name of ``--components a,b``, components and overlays for
``kfctl catalog NAME``. Reads the catalog shipped with kfctl; offline, prints nothing (click prints)."""

from __future__ import annotations

from collections.abc import Iterable

import click

from kfctl.catalog.load import load_catalog


def _starting(names: Iterable[str], incomplete: str, *, prefix: str = "") -> list[str]:
    return [prefix + n for n in sorted(names) if n.startswith(incomplete)]


def platforms(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    return _starting(load_catalog().platforms, incomplete)


def components(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """The last name of a comma-separated list; the names before it are kept and not offered again."""
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    return _starting(set(load_catalog().components) - given, last, prefix=f"{done}," if done else "")


def catalog_entries(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    cat = load_catalog()
    return _starting([*cat.components, *cat.overlays, *cat.platforms], incomplete)
