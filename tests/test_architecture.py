"""Boundaries are imports: only kfctl/k8s talks to the API, only kfctl/render runs subprocesses, and the
layers point one way — every package and loose module of kfctl/ has a rule naming what it may import, so a new
one fails here until it is given one. Also: no printing below the CLI. (No shell and no unsafe YAML loading,
across kfctl/ and the rest of the repository, is tests/test_reliability_audit.py's one audit.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from kfctl.engine.events import EventType

PACKAGE = Path(__file__).resolve().parent.parent / "kfctl"
SOURCES = sorted(PACKAGE.rglob("*.py"))
ENGINE_README = PACKAGE / "engine" / "README.md"


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports; ``from kfctl import yamlio`` counts as ``kfctl.yamlio``, ``from kfctl import
    __version__`` as ``kfctl.__init__``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "kfctl":  # a module, or a name of the package's own
            out.update(f"kfctl.{a.name}" if _is_module(a.name) else "kfctl.__init__" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def _is_module(name: str) -> bool:
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def area(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def areas() -> set[str]:
    return {area(p) for p in SOURCES}


# module prefix → the only package areas allowed to import it
RESTRICTED = {
    "kubernetes": {"k8s"},
    "subprocess": {"render"},
    "click": {"cli"},
    "rich": {"cli"},
}
# The loose modules at the bottom: facts and helpers with no kfctl import but their own kind (the package's
# __init__ holds __version__).
LEAVES = frozenset({"__init__", "errors", "fsutil", "ordering", "quantity", "removed_apis", "wording", "yamlio"})
# Each area → the kfctl areas it may import besides itself (cli → app → render/plan/engine → health/config → k8s).
MAY_IMPORT: dict[str, frozenset[str]] = {
    **{leaf: frozenset() for leaf in LEAVES},
    "objects": frozenset({"errors", "yamlio"}),
    "health": LEAVES | {"objects"},
    "k8s": LEAVES | {"objects"},
    "catalog": LEAVES | {"objects"},
    "config": LEAVES | {"objects", "catalog", "health"},  # health: spec.waitRules are its WaitRule values
    "migrate": LEAVES | {"objects", "catalog", "config"},
    "plan": LEAVES | {"objects", "health"},
    "engine": LEAVES | {"objects", "health", "k8s", "plan"},
    # The sources of the bases render builds, and render's git wrapper they fetch with: one level, two areas.
    "repos": LEAVES | {"objects", "config", "render"},
    "render": LEAVES | {"objects", "catalog", "config", "repos"},
    "secrets": LEAVES | {"objects", "catalog", "config", "k8s", "engine"},
    # `kfctl check`: the checks read the cluster the way apply does, below the use cases that run them.
    "check": LEAVES | {"objects", "catalog", "config", "health", "k8s", "engine", "render", "secrets"},
    "app": LEAVES
    | {"objects", "catalog", "config", "migrate", "health", "k8s", "plan", "engine", "repos", "render"}
    | {"secrets", "check"},
    "cli": LEAVES
    | {"objects", "catalog", "config", "migrate", "health", "k8s", "plan", "engine", "repos", "render"}
    | {"secrets", "check", "app"},
}


def test_every_area_has_a_rule() -> None:
    """A package or loose module without a rule could import anything: name what it may import."""
    assert sorted(areas() - MAY_IMPORT.keys()) == []


def test_no_rule_for_what_is_not_there() -> None:
    assert sorted(MAY_IMPORT.keys() - areas()) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_respect_the_boundaries(path: Path) -> None:
    where = area(path)
    allowed = MAY_IMPORT.get(where, frozenset()) | {where}
    for module in imports(path):
        top = module.split(".")[0]
        if top in RESTRICTED:
            assert where in RESTRICTED[top], f"{path.name} in {where}/ imports {module}"
        if top == "kfctl" and module != "kfctl":
            target = module.split(".")[1]
            assert target in allowed, f"{where}/{path.name} imports {module}: {where} may import {sorted(allowed)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_print_below_the_cli(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            pytest.fail(f"{path.name}:{node.lineno} prints; only the CLI writes to the terminal")


def test_test_modules_have_unique_names_across_tests_and_e2e() -> None:
    """pytest imports test modules by their basename (rootdir-less "prepend" mode): two test_x.py files in
    tests/ and e2e/ stop the whole collection with "import file mismatch", so CI would run nothing."""
    root = Path(__file__).resolve().parent.parent
    names = [p.name for d in ("tests", "e2e") for p in (root / d).glob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def _names_defined() -> set[str]:
    """Every class, function, method and module-level name kfctl/ defines."""
    out: set[str] = {p.stem for p in SOURCES}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Assign):
                out.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
    return out


def test_the_engine_readme_names_what_exists() -> None:
    """The newcomer's path through the engine names the functions an object meets: each still exists."""
    path = ENGINE_README.read_text().split("## A newcomer's path", 1)[1]
    named = re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", path)
    code = [n for n in named if "_" in n or "." in n or n[0].isupper()]
    defined = _names_defined() | set(get_args(EventType))  # and the events it emits
    missing = sorted({n for n in code if n.split(".")[-1] not in defined and not n.endswith(".py")})
    assert missing == [], "kfctl/engine/README.md names what kfctl does not define"
