"""Hostile or broken YAML: every file kfctl reads for itself is refused within bounded memory, naming the file
and the line — an alias bomb, deep nesting, a huge file, a key stated twice, bytes that are not UTF-8.

Tables: file content in, the exact message out, for the KfDef, a catalog component.yaml, the lock file and
a foreign repo's kustomization.yaml; the alias bomb and deep nesting also through the real CLI in a process
whose address space is capped at 300 MB (the CLI itself needs about 40 MB to get that far)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kfctl import yamlio
from kfctl.catalog.load import catalog_root, load_catalog
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import ConfigError, RenderError
from kfctl.objects import parse_stream
from kfctl.repos.lock import read_lock
from kfctl.repos.remote import remote_references

REPO = Path(__file__).resolve().parent.parent
FIXTURE_CATALOG = Path(__file__).parent / "fixtures" / "catalog"
ADDRESS_SPACE = 300 * 1024 * 1024
MIB4 = 4 * 1024 * 1024

# Nine levels of ten aliases: 1 KiB of text, 10⁹ nodes expanded. Each *a4 stands for 21 111 nodes, so the
# fourth one on a5's line crosses 100 000.
BOMB = "a0: &a0 [lol]\n" + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
DEEP = "[" * 150 + "]" * 150

HEAD = "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata:\n  name: demo\n"
TAIL = "spec:\n  platform: kind\n  applications:\n    - name: common\n"


def nested(block: str, indent: str) -> str:
    return "".join(indent + line + "\n" for line in block.splitlines())


@dataclass(frozen=True)
class Case:
    content: bytes
    message: str  # "{file}" stands for the path of the file
    details: tuple[str, ...] = ()


KFDEFS = [
    pytest.param(
        Case(
            (HEAD + "  annotations:\n    bomb:\n" + nested(BOMB, "      ") + TAIL).encode(),
            "{file}:12:31: the alias *a4 expands the document past 100000 nodes (aliases of aliases: a YAML bomb?)",
        ),
        id="alias-bomb",
    ),
    pytest.param(
        Case(
            (HEAD + f"  annotations:\n    deep: {DEEP}\n" + TAIL).encode(),
            "{file}:6:108: nested more than 100 levels deep",
        ),
        id="deep-nesting",
    ),
    pytest.param(
        Case(
            (HEAD + TAIL + "# " + "x" * MIB4 + "\n").encode(),
            "{file}:9:" + str(MIB4 - len(HEAD + TAIL) + 1) + ": the file is larger than 4 MiB, the most kfctl reads "
            "of a YAML file (the limit falls here)",
        ),
        id="huge-file",
    ),
    pytest.param(
        Case(
            (HEAD + TAIL + "  platform: aws\n").encode(),
            "{file}: 1 problem in the KfDef",
            ("{file}:9:3 spec.platform: key 'platform' appears twice, on lines 6 and 9",),
        ),
        id="duplicate-key",
    ),
    pytest.param(
        Case(
            HEAD.replace("demo", "d\xe9mo").encode("latin-1") + TAIL.encode(),
            "{file}:4:10: not UTF-8 text: byte 0xe9 at offset 70",
        ),
        id="not-utf8",
    ),
]


@pytest.mark.parametrize("case", KFDEFS)
def test_a_hostile_kfdef_is_a_config_error_with_file_and_line(tmp_path: Path, catalog: Catalog, case: Case) -> None:
    path = tmp_path / "kfdef.yaml"
    path.write_bytes(case.content)
    with pytest.raises(ConfigError) as info:
        load_kfdef(path, catalog)
    assert info.value.exit_code == 3
    assert info.value.message == case.message.format(file=path)
    assert info.value.details == [d.format(file=path) for d in case.details]


@pytest.mark.parametrize("case", [p for p in KFDEFS if p.id in ("alias-bomb", "deep-nesting", "not-utf8", "huge-file")])
def test_the_cli_refuses_hostile_kfdefs_in_300_mb_of_address_space(tmp_path: Path, case: Case) -> None:
    (tmp_path / "kfdef.yaml").write_bytes(case.content)
    code, out, err = run_capped("generate", str(tmp_path))
    expected = "Error (config error): " + case.message.format(file=tmp_path / "kfdef.yaml")
    assert (code, out, err.splitlines()[0]) == (3, "", expected)


def test_the_cli_starts_within_the_cap() -> None:
    """The control for the test above: the interpreter and kfctl's imports fit (they need about 20 MB)."""
    code, out, err = run_capped("version")
    assert (code, out.split()[0], err) == (0, "kfctl", "")


def run_capped(*argv: str) -> tuple[int, str, str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "kfctl.cli.main", *argv],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=cap,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


COMPONENT = "name: katib\ndescription: Hyperparameter tuning.\nnamespace: kubeflow\n"
METADATA = [
    pytest.param(
        (COMPONENT + "extra:\n" + nested(BOMB, "  ")).encode(),
        "{file}:10:27: the alias *a4 expands the document past 100000 nodes (aliases of aliases: a YAML bomb?)",
        id="alias-bomb",
    ),
    pytest.param(
        (COMPONENT + f"extra: {DEEP}\n").encode(), "{file}:4:107: nested more than 100 levels deep", id="deep"
    ),
    pytest.param(
        (COMPONENT + "# " + "x" * MIB4 + "\n").encode(),
        "{file}:4:" + str(MIB4 - len(COMPONENT) + 1) + ": the file is larger than 4 MiB, the most kfctl reads of a "
        "YAML file (the limit falls here)",
        id="huge-file",
    ),
    pytest.param(
        (COMPONENT + "namespace: other\n").encode(),
        "{file}:4:1: key 'namespace' appears twice, on lines 3 and 4",
        id="duplicate-key",
    ),
    pytest.param(
        COMPONENT.replace("tuning", "tun\xefng").encode("latin-1"),
        "{file}:2:32: not UTF-8 text: byte 0xef at offset 43",
        id="not-utf8",
    ),
    pytest.param(
        (COMPONENT + "extra: &a [*a]\n").encode(),
        "{file}:4:12: the alias *a refers to a node that contains it",
        id="recursive-alias",
    ),
]


@pytest.mark.parametrize(("content", "message"), METADATA)
def test_hostile_catalog_metadata_is_a_config_error_with_file_and_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    root = tmp_path / "catalog"
    shutil.copytree(FIXTURE_CATALOG, root)
    path = root / "manifests" / "katib" / "component.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_catalog(root)
    assert (info.value.exit_code, info.value.message) == (3, message.format(file=path))


LOCK_HEAD = "apiVersion: kfctl.kubeflow.org/v1alpha1\nkind: KfDefLock\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            (LOCK_HEAD + "repos:\n" + nested(BOMB, "  ")).encode(),
            "{file}:9:27: the alias *a4 expands the document past 100000 nodes (aliases of aliases: a YAML bomb?)",
            id="alias-bomb",
        ),
        pytest.param(
            (LOCK_HEAD + "kind: KfDefLock\nrepos: []\n").encode(),
            "{file}:3:1: key 'kind' appears twice, on lines 2 and 3",
            id="duplicate-key",
        ),
        pytest.param(b"\xff\xfe" + LOCK_HEAD.encode(), "{file}:1:1: not UTF-8 text: byte 0xff at offset 0", id="utf16"),
    ],
)
def test_a_hostile_lock_file_is_a_config_error_with_file_and_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "kfdef.lock"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        read_lock(path)
    assert (info.value.exit_code, info.value.message) == (3, message.format(file=path))
    assert info.value.hint == "run `kfctl generate --refresh` to resolve the repos again and rewrite the lock file"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(("resources: [github.com/org/repo/base]\nextra:\n" + nested(BOMB, "  ")).encode(), id="bomb"),
        pytest.param(f"resources: [github.com/org/repo/base]\nextra: {DEEP}\n".encode(), id="deep"),
        pytest.param(b"resources: [github.com/org/repo/base]\n# " + b"x" * MIB4 + b"\n", id="huge-file"),
        pytest.param(b"resources: [github.com/org/repo/base]\nresources: [a]\n", id="duplicate-key"),
        pytest.param(b"resources: [github.com/org/repo/base]\n# \xff\n", id="not-utf8"),
    ],
)
def test_a_foreign_kustomization_past_the_limits_is_left_to_kustomize(tmp_path: Path, content: bytes) -> None:
    """remote_references (--offline's look for remote bases) reports nothing about a file it cannot read —
    kustomize will, in its own words — but it reads it within the same bounds."""
    (tmp_path / "kustomization.yaml").write_bytes(content)
    assert remote_references(tmp_path, root=tmp_path) == []


def test_a_foreign_kustomization_with_a_few_aliases_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("x: &r github.com/org/repo/base\nresources: [*r]\n")
    assert [r.value for r in remote_references(tmp_path, root=tmp_path)] == ["github.com/org/repo/base"]


OBJECT = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            OBJECT + nested(BOMB, "  "),
            "application x: line 10, column 27 of the output: the alias *a4 expands the document past 100000 nodes "
            "(aliases of aliases: a YAML bomb?)",
            id="alias-bomb",
        ),
        pytest.param(
            OBJECT + "  a: &a hello\n  b: *a\n  run: sh -c 'make && make install'\n",
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "x"},
                    "data": {"a": "hello", "b": "hello", "run": "sh -c 'make && make install'"},
                }
            ],
            id="few-aliases",
        ),
    ],
)
def test_rendered_output_gets_the_alias_bound(text: str, expected: str | list[object]) -> None:
    if isinstance(expected, str):
        with pytest.raises(RenderError) as info:
            parse_stream(text, source="application x")
        assert (info.value.exit_code, info.value.message) == (4, expected)
    else:
        assert parse_stream(text, source="application x") == expected


def test_merge_keys_still_override_and_only_a_mappings_own_keys_count_twice() -> None:
    text = "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n"
    assert yamlio.safe_load(text) == {"base": {"x": 1, "y": 2}, "m": {"x": 3, "y": 2}}


def test_real_files_are_far_inside_the_limits() -> None:
    """The limits stay a hundred times (nodes) and five times (depth) what the real catalog and the user guide's
    KfDef use, so no real file comes near them."""
    root = catalog_root()
    files = [p for part in ("manifests", "overlays", "platforms") for p in sorted((root / part).glob("*/*.yaml"))]
    texts = [
        p.read_text(encoding="utf-8") for p in files if p.name in ("component.yaml", "overlay.yaml", "platform.yaml")
    ]
    guide = (REPO / "docs" / "kfdef.md").read_text(encoding="utf-8")
    texts.append(guide.split("# The KfDef", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0])
    assert len(texts) > 10
    for text in texts:
        yamlio.check_limits(text, max_nodes=yamlio.MAX_NODES // 100, max_depth=yamlio.MAX_DEPTH // 5)
