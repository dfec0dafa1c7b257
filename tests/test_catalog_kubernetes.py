"""A component's supported Kubernetes range: how component.yaml declares it (a table of declarations in, the
loaded range or the exact error out), and the catalog's rule that every component either declares one with its
upstream source or says in a comment why it declares none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kfctl import yamlio
from kfctl.catalog.load import kubernetes_range
from kfctl.catalog.model import Catalog, KubernetesRange
from kfctl.errors import ConfigError

PATH = Path("manifests/op/component.yaml")


def declared(declaration: str) -> KubernetesRange | None:
    return kubernetes_range(yamlio.safe_load(declaration or "{}"), PATH)


@pytest.mark.parametrize(
    ("declaration", "loaded", "described"),
    [
        pytest.param("", None, None, id="not declared"),
        pytest.param('kubernetes: {min: "1.28"}', KubernetesRange("1.28"), "≥ 1.28", id="minimum only"),
        pytest.param(
            'kubernetes: {min: "1.31", max: "1.35"}', KubernetesRange("1.31", "1.35"), "1.31–1.35", id="both bounds"
        ),
        pytest.param(
            'kubernetes: {min: "1.32", max: "1.32"}', KubernetesRange("1.32", "1.32"), "1.32 only", id="one minor"
        ),
    ],
)
def test_a_declared_range_loads_as_written(
    declaration: str, loaded: KubernetesRange | None, described: str | None
) -> None:
    got = declared(declaration)
    assert got == loaded
    assert (got.describe() if got else None) == described


FORMS = 'kubernetes must be {min: "1.N"} or {min: "1.N", max: "1.M"} (quoted minors), got '


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        pytest.param('kubernetes: {max: "1.33"}', FORMS + "{'max': '1.33'}", id="max without min"),
        pytest.param("kubernetes: {min: 1.28}", FORMS + "{'min': 1.28}", id="unquoted minor"),
        pytest.param('kubernetes: {min: "1.28.3"}', FORMS + "{'min': '1.28.3'}", id="a patch version"),
        pytest.param('kubernetes: {min: "v1.28"}', FORMS + "{'min': 'v1.28'}", id="a v prefix"),
        pytest.param(
            'kubernetes: {min: "1.28", tested: "1.30"}', FORMS + "{'min': '1.28', 'tested': '1.30'}", id="unknown key"
        ),
        pytest.param('kubernetes: ">=1.28"', FORMS + "'>=1.28'", id="a string"),
        pytest.param('kubernetes: {min: "1.33", max: "1.31"}', "kubernetes max 1.31 is below min 1.33", id="max < min"),
    ],
)
def test_a_malformed_range_is_a_config_error_naming_the_file(declaration: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        declared(declaration)
    assert str(e.value) == f"{PATH}: {message}"


def test_every_component_cites_its_range_or_says_why_it_has_none(real_catalog: Catalog) -> None:
    """`# kubernetes:` opens the comment above the key (or stands alone when there is no key): a declared range
    names where upstream states it (a URL or a repository file), an undeclared one says why none is."""
    problems = []
    for name, component in sorted(real_catalog.components.items()):
        text = (component.path / "component.yaml").read_text()
        comment = re.search(r"^# kubernetes: .*(?:\n#.*)*", text, flags=re.M)
        if comment is None:
            problems.append(f"{name}: no '# kubernetes:' comment")
        elif component.kubernetes is not None and not re.search(r"https://|\w+/\w+[\w/.-]*\.md", comment.group()):
            problems.append(f"{name}: declares {component.kubernetes.describe()} without naming a source")
        elif component.kubernetes is None and "not declared" not in comment.group():
            problems.append(f"{name}: declares no range and does not say 'not declared'")
    assert problems == []
