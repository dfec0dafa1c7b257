"""Boundaries are imports: only kfctl/k8s talks to the API, only kfctl/render runs subprocesses, and the
layers point one way. Also the cheap safety audit: no shell=True, no unsafe YAML loading, no printing below
the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kfctl"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def area(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


# module prefix → the only package areas allowed to import it
RESTRICTED = {
    "kubernetes": {"k8s"},
    "subprocess": {"render"},
    "click": {"cli"},
    "rich": {"cli"},
}
# Lower layers must not import higher ones (cli → app → render/plan/engine → health/config → k8s).
FORBIDDEN_UPWARD = {
    "k8s": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.health"},
    "health": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render"},
    "yamlio": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.k8s", "kfctl.config"},
    # One dependency order for the catalog, the planner and the applications: below all of them.
    "ordering": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.k8s", "kfctl.config"},
    "config": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.k8s"},
    "catalog": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.k8s"},
    "repos": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.k8s"},
    "render": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.k8s"},
    "plan": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.k8s"},
    "engine": {"kfctl.cli", "kfctl.app"},
    "secrets": {"kfctl.cli", "kfctl.app", "kfctl.render", "kfctl.plan"},
    "migrate": {"kfctl.cli", "kfctl.app", "kfctl.engine", "kfctl.plan", "kfctl.render", "kfctl.k8s", "kfctl.health"},
    "app": {"kfctl.cli"},
}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_respect_the_boundaries(path: Path) -> None:
    where = area(path)
    for module in imports(path):
        top = module.split(".")[0]
        if top in RESTRICTED:
            assert where in RESTRICTED[top], f"{path.name} in {where}/ imports {module}"
        for banned in FORBIDDEN_UPWARD.get(where, ()):
            assert not module.startswith(banned), f"{where}/{path.name} imports {module} (a higher layer)"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_shell_no_unsafe_yaml_no_print_below_the_cli(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "shell":
            pytest.fail(f"{path.name}:{node.value.lineno} passes shell=")
        unsafe = ("load", "load_all", "unsafe_load", "full_load")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in unsafe
            and getattr(node.value, "id", "") == "yaml"
            and path.name != "yamlio.py"  # the one place that picks the (C) safe loader explicitly
        ):
            pytest.fail(f"{path.name}:{node.lineno} uses yaml.{node.attr}; use yaml.safe_load")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            pytest.fail(f"{path.name}:{node.lineno} prints; only the CLI writes to the terminal")


def test_test_modules_have_unique_names_across_tests_and_e2e() -> None:
    """pytest imports test modules by their basename (rootdir-less "prepend" mode): two test_x.py files in
    tests/ and e2e/ stop the whole collection with "import file mismatch", so CI would run nothing."""
    root = Path(__file__).resolve().parent.parent
    names = [p.name for d in ("tests", "e2e") for p in (root / d).glob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
