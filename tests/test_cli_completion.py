"""Shell completion of the catalog's names: the words typed so far and the one being typed → what is offered."""

from __future__ import annotations

import pytest
from click.shell_completion import ShellComplete

from kfctl.catalog.model import Catalog
from kfctl.cli.main import cli

# (the words before, the word being typed) → the values offered.
COMPLETIONS = [
    pytest.param(["init", "demo", "--platform"], "", ["aws", "azure", "gcp", "generic", "kind"], id="platforms"),
    pytest.param(["init", "demo", "-p"], "g", ["gcp", "generic"], id="platform-prefix"),
    pytest.param(["init", "demo", "-c"], "kat", ["katib"], id="component"),
    pytest.param(["init", "demo", "--components"], "katib,ks", ["katib,kserve"], id="second-component"),
    pytest.param(["init", "demo", "-c"], "katib,katib", [], id="no-repeat"),
    pytest.param(["catalog"], "image-m", ["image-mirror"], id="overlay"),
    pytest.param(["catalog"], "cert", ["cert-manager"], id="catalog-component"),
]


@pytest.mark.parametrize(("args", "incomplete", "offered"), COMPLETIONS)
def test_completion_offers_the_catalogs_names(args: list[str], incomplete: str, offered: list[str]) -> None:
    completions = ShellComplete(cli, {}, "kfctl", "_KFCTL_COMPLETE").get_completions(args, incomplete)
    assert [c.value for c in completions] == offered


def test_every_component_is_offered(real_catalog: Catalog) -> None:
    completions = ShellComplete(cli, {}, "kfctl", "_KFCTL_COMPLETE").get_completions(["init", "demo", "-c"], "")
    assert [c.value for c in completions] == sorted(real_catalog.components)
