"""R6, the static half: across everything we ship and run (kfctl/, tests/, e2e/, bench/) no shell is ever
involved in running a process, and YAML is only ever loaded by a safe constructor.

The one audit of these (tests/test_architecture.py keeps to imports and printing): kfctl/ and the test and bench
code alike (they run with the developer's rights), and what kfctl/yamlio.py's one explicit loader really is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from kfctl import yamlio

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    p
    for d in ("kfctl", "tests", "e2e", "bench")
    for p in (ROOT / d).rglob("*.py")
    if "gobuild" not in p.parts and ".venv" not in p.parts
)
PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
UNSAFE_YAML = frozenset({"load", "load_all", "unsafe_load", "full_load", "full_load_all"})


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("path", SOURCES, ids=rel)
def test_no_shell_and_no_unsafe_yaml(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        where = f"{rel(path)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.keyword) and node.arg == "shell":
            assert isinstance(node.value, ast.Constant) and node.value.value is False, f"{where}: shell="
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = getattr(node.func.value, "id", "")
            if owner == "os" and node.func.attr in ("system", "popen"):
                pytest.fail(f"{where}: os.{node.func.attr} runs a shell")
            if owner == "subprocess" and node.func.attr in PROCESS_CALLS and node.args:
                first = node.args[0]
                assert not isinstance(first, (ast.Constant, ast.JoinedStr)), f"{where}: a command line as one string"
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "yaml" and node.attr in UNSAFE_YAML:
            # called or passed on: either way an unsafe loader is in reach
            assert rel(path) == "kfctl/yamlio.py", f"{where}: yaml.{node.attr}; use yaml.safe_load"
        if isinstance(node, ast.keyword) and node.arg == "Loader":
            assert rel(path) == "kfctl/yamlio.py", f"{where}: an explicit YAML Loader outside kfctl/yamlio.py"


def test_the_one_explicit_loader_is_a_safe_one() -> None:
    loader = yamlio._LOADER
    assert issubclass(loader, yaml.constructor.SafeConstructor)
    assert not issubclass(loader, (yaml.constructor.FullConstructor, yaml.constructor.UnsafeConstructor))
    with pytest.raises(yaml.constructor.ConstructorError):
        yamlio.safe_load("!!python/object/apply:os.system ['true']")
