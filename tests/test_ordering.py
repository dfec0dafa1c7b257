"""One dependency order for every graph kfctl walks (kfctl.ordering): the layers a graph falls into, and the
exact cycle named — the same way for the planner, the catalog (`kfctl init`) and applications."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kfctl.app.init import init_app
from kfctl.catalog.model import Catalog
from kfctl.errors import ConfigError, PlanError
from kfctl.ordering import DependencyCycle, layers, order
from kfctl.plan.graph import build_plan, topological_order

# (id, node → what it waits for, the layers)
LAYER_CASES: list[tuple[str, dict[str, list[str]], list[list[str]]]] = [
    ("empty", {}, []),
    ("lone-nodes-sorted-in-one-layer", {"b": [], "a": []}, [["a", "b"]]),
    ("a-chain", {"a": ["b"], "b": ["c"], "c": []}, [["c"], ["b"], ["a"]]),
    ("depth-is-the-longest-chain", {"top": ["mid", "low"], "mid": ["low"], "low": []}, [["low"], ["mid"], ["top"]]),
    ("a-dependency-named-only-as-such-is-a-node", {"a": ["x"]}, [["x"], ["a"]]),
    ("diamond", {"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []}, [["a"], ["b", "c"], ["d"]]),
]


@pytest.mark.parametrize(("case", "deps", "expected"), LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_layers_group_nodes_by_the_longest_chain_below_them(
    case: str, deps: dict[str, list[str]], expected: list[list[str]]
) -> None:
    assert layers(deps) == expected
    assert order(deps) == [n for layer in expected for n in layer]


# (id, node → what it waits for, the cycle as named: "waits for" order, from its smallest node, closed)
CYCLE_CASES: list[tuple[str, dict[str, list[str]], list[str]]] = [
    ("self", {"a": ["a"]}, ["a", "a"]),
    ("two", {"b": ["a"], "a": ["b"]}, ["a", "b", "a"]),
    ("three-named-from-the-smallest", {"c": ["a"], "a": ["b"], "b": ["c"]}, ["a", "b", "c", "a"]),
    ("direction-is-waits-for", {"x": ["z"], "z": ["y"], "y": ["x"]}, ["x", "z", "y", "x"]),
    ("beside-acyclic-nodes", {"ok": [], "p": ["q"], "q": ["p"], "r": ["ok"]}, ["p", "q", "p"]),
]


@pytest.mark.parametrize(("case", "deps", "cycle"), CYCLE_CASES, ids=[c[0] for c in CYCLE_CASES])
def test_a_cycle_is_named_the_same_way_every_time(case: str, deps: dict[str, list[str]], cycle: list[str]) -> None:
    with pytest.raises(DependencyCycle) as err:
        layers(deps)
    assert err.value.nodes == cycle
    assert str(err.value) == " → ".join(cycle)


def configmap(name: str, *after: str) -> dict[str, object]:
    annotations = {"kfctl.kubeflow.org/depends-on": ",".join(f"ConfigMap/default/{a}" for a in after)} if after else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", **({"annotations": annotations} if annotations else {})},
    }


def test_the_planner_orders_by_waves_and_names_a_three_step_cycle() -> None:
    plan = build_plan([("app", [configmap("c", "b"), configmap("b", "a"), configmap("a")])], depends_on={})
    assert topological_order(plan) == ["ConfigMap default/a", "ConfigMap default/b", "ConfigMap default/c"]
    with pytest.raises(PlanError) as err:
        build_plan([("app", [configmap("c", "b"), configmap("b", "a"), configmap("a", "c")])], depends_on={})
    assert err.value.message == (
        "dependency cycle: ConfigMap default/a → ConfigMap default/c → ConfigMap default/b → ConfigMap default/a"
    )
    assert err.value.details == [
        "ConfigMap default/a waits for ConfigMap default/c: annotation kfctl.kubeflow.org/depends-on",
        "ConfigMap default/c waits for ConfigMap default/b: annotation kfctl.kubeflow.org/depends-on",
        "ConfigMap default/b waits for ConfigMap default/a: annotation kfctl.kubeflow.org/depends-on",
    ]


def test_a_catalog_cycle_is_a_config_error_naming_it_not_a_recursion_error(tmp_path: Path, catalog: Catalog) -> None:
    first, second = sorted(catalog.components)[:2]
    components = dict(catalog.components)
    components[first] = dataclasses.replace(components[first], depends_on=(second,))
    components[second] = dataclasses.replace(components[second], depends_on=(first,))
    looped = dataclasses.replace(catalog, components=components)
    platform = next(p for p in sorted(looped.platforms))
    with pytest.raises(ConfigError) as err:
        init_app(
            looped, app_dir=tmp_path / "demo", platform=platform, components=[first], namespace="kubeflow", force=False
        )
    assert err.value.message == f"catalog: components depend on each other in a cycle: {first} → {second} → {first}"
    assert err.value.details == [
        f"{first} dependsOn {second} ({components[first].path / 'component.yaml'})",
        f"{second} dependsOn {first} ({components[second].path / 'component.yaml'})",
    ]
    assert err.value.exit_code == 3
    assert not (tmp_path / "demo" / "kfdef.yaml").exists()
