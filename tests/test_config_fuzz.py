"""Property: whatever bytes arrive, the loader either returns a KfDef or raises ConfigError — nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfctl.catalog.model import Catalog
from kfctl.config.loader import parse_kfdef
from kfctl.errors import ConfigError

VALID: dict[str, Any] = {
    "apiVersion": "kfdef.apps.kubeflow.org/v1",
    "kind": "KfDef",
    "metadata": {"name": "demo", "namespace": "kubeflow"},
    "spec": {
        "platform": "aws",
        "plugins": [{"kind": "KfAwsPlugin", "spec": {"clusterName": "c", "region": "r"}}],
        "repos": [{"name": "manifests", "uri": "kfctl://catalog"}],
        "applications": [
            {"name": "common"},
            {
                "name": "training-operator",
                "dependsOn": ["common"],
                "kustomizeConfig": {
                    "repoRef": {"name": "manifests", "path": "manifests/training-operator"},
                    "overlays": ["ha"],
                    "parameters": [{"name": "replicas", "value": 2}],
                },
            },
        ],
    },
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["kfctl://catalog", "manifests", "common", "ha", "replicas", "v1", "KfDef", "name"]),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_kfdefs(draw: st.DrawFn) -> Any:
    """The valid KfDef with one to three subtrees replaced by arbitrary values (or deleted)."""
    doc = yaml.safe_load(yaml.safe_dump(VALID))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(values)
    return doc


def _check(text: str, catalog: Catalog) -> None:
    try:
        parse_kfdef(text, path=Path("kfdef.yaml"), catalog=catalog)
    except ConfigError as e:
        assert e.exit_code == 3
        assert str(e)


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(doc=mutated_kfdefs())
def test_mutated_kfdefs_load_or_raise_config_error(doc: Any, catalog: Catalog) -> None:
    _check(yaml.safe_dump(doc, allow_unicode=True), catalog)


@SETTINGS
@given(doc=values)
def test_random_yaml_values_load_or_raise_config_error(doc: Any, catalog: Catalog) -> None:
    _check(yaml.safe_dump(doc, allow_unicode=True), catalog)


@SETTINGS
@given(text=st.text(max_size=300))
def test_random_text_loads_or_raises_config_error(text: str, catalog: Catalog) -> None:
    _check(text, catalog)


@SETTINGS
@given(at=st.integers(0, len(yaml.safe_dump(VALID))), junk=st.text(max_size=8))
def test_spliced_text_loads_or_raises_config_error(at: int, junk: str, catalog: Catalog) -> None:
    text = yaml.safe_dump(VALID)
    _check(text[:at] + junk + text[at:], catalog)
