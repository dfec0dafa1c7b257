"""Rendered files read back through the parsed-object cache (kfctl.app.rendered): a copy gives exactly what
parsing the YAML gives (values and their types), is used only for the very text it was made from, and a
cache file that is missing, cut short or wrong is ignored and written anew."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kfctl.app.rendered as rendered
from kfctl.app.bundle import load_bundle
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import RenderError
from kfctl.objects import parse_stream

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


def typed(value: Any) -> Any:
    """``value`` with the type of every scalar spelled out: 1, 1.0 and True are three different things."""
    if isinstance(value, dict):
        return {typed(k): typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, repr(value))


# text, whether its objects are kept as JSON (else parsed every time: JSON would not carry them exactly)
CASES = [
    pytest.param(
        HEAD + "data: {a: '1', b: '007'}\nspec: {n: 1, f: 1.0, e: 1e3, t: true, y: yes, o: 0o14, z: null}\n",
        True,
        id="ints, floats, YAML 1.1 booleans and octals keep their types",
    ),
    pytest.param(HEAD + "spec: {inf: .inf, big: 123456789012345678901234567890}\n", True, id="infinity, big int"),
    pytest.param(HEAD + "spec: {when: 2024-01-01T00:00:00Z}\n", False, id="an unquoted timestamp is a datetime"),
    pytest.param(HEAD + "spec: {when: '2024-01-01T00:00:00Z'}\n", True, id="a quoted one is a string"),
    pytest.param(HEAD + "spec: {1: one}\n", False, id="an integer key"),
    pytest.param(HEAD + "spec: {x: .nan}\n", False, id="NaN equals nothing, not even itself"),
    pytest.param(HEAD + "spec: {b: !!binary aGk=}\n", False, id="binary"),
    pytest.param(HEAD + "spec: {a: &x [1], b: *x}\n", False, id="an alias shares one object"),
    pytest.param(HEAD + "data: {pw: 'a&b'}\n", True, id="an ampersand that is no anchor"),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems:\n- " + HEAD.replace("\n", "\n  ").rstrip() + "\n---\n---\n" + HEAD,
        True,
        id="a List is flattened, empty documents dropped",
    ),
    pytest.param("", True, id="an empty file"),
]


@pytest.mark.parametrize(("text", "kept"), CASES)
def test_a_copy_is_exactly_the_parse(tmp_path: Path, text: str, kept: bool) -> None:
    path, cache = tmp_path / "rendered" / "app.yaml", tmp_path / "cache"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    expected = typed(parse_stream(text, source=str(path)))
    first = rendered.read_objects(path, app="app", cache=cache)
    second = rendered.read_objects(path, app="app", cache=cache)
    assert (typed(first), typed(second), (cache / "app.json").exists()) == (expected, expected, kept)


def test_a_hit_does_not_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, cache = tmp_path / "app.yaml", tmp_path / "cache"
    path.write_text(HEAD, encoding="utf-8")
    objects = rendered.read_objects(path, app="app", cache=cache)

    def no_parse(text: str, *, source: str) -> list[dict[str, Any]]:
        raise AssertionError(f"parsed {source}")

    monkeypatch.setattr(rendered, "parse_stream", no_parse)
    assert (
        rendered.read_objects(path, app="app", cache=cache)
        == objects
        == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]
    )


def test_a_changed_file_is_parsed_again_never_served_stale(tmp_path: Path) -> None:
    path, cache = tmp_path / "app.yaml", tmp_path / "cache"
    names = []
    for name in ("a", "b", "a"):
        path.write_text(HEAD.replace("name: c", f"name: {name}"), encoding="utf-8")
        names.append(rendered.read_objects(path, app="app", cache=cache)[0]["metadata"]["name"])
    assert names == ["a", "b", "a"]


KEY_OF_HEAD = rendered._digest(HEAD)

# what the cache file holds before the read (bytes; None: a directory stands in its place)
BROKEN = [
    pytest.param(b'{"key": "', id="cut short"),
    pytest.param(b"\xff\xfe not UTF-8", id="not UTF-8"),
    pytest.param(b"[]", id="not an object"),
    pytest.param(json.dumps({"key": KEY_OF_HEAD, "objects": [1]}).encode(), id="objects that are not objects"),
    pytest.param(json.dumps({"key": KEY_OF_HEAD, "objects": [{"kind": "X"}]}).encode(), id="an object w/o apiVersion"),
    pytest.param(json.dumps({"key": KEY_OF_HEAD, "objects": {}}).encode(), id="objects not a list"),
    pytest.param(json.dumps({"key": "0" * 64, "objects": []}).encode(), id="another text's copy"),
]


@pytest.mark.parametrize("content", BROKEN)
def test_a_broken_cache_file_is_ignored_and_rewritten(tmp_path: Path, content: bytes) -> None:
    path, cache = tmp_path / "app.yaml", tmp_path / "cache"
    path.write_text(HEAD, encoding="utf-8")
    cache.mkdir()
    (cache / "app.json").write_bytes(content)
    expected = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]
    assert rendered.read_objects(path, app="app", cache=cache) == expected
    assert json.loads((cache / "app.json").read_text()) == {"key": KEY_OF_HEAD, "objects": expected}
    assert sorted(p.name for p in cache.iterdir()) == ["app.json"]  # no temp file left behind


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path) -> None:
    path, cache = tmp_path / "app.yaml", tmp_path / "cache"
    path.write_text(HEAD, encoding="utf-8")
    cache.write_text("a file where the directory should be")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "app.json").mkdir()  # a directory where the file should be
    expected = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]
    assert rendered.read_objects(path, app="app", cache=cache) == expected
    assert rendered.read_objects(path, app="app", cache=tmp_path / "dir") == expected


def test_invalid_yaml_is_the_same_render_error_as_without_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(HEAD + "spec: [\n", encoding="utf-8")
    with pytest.raises(RenderError) as cached:
        rendered.read_objects(path, app="app", cache=tmp_path / "cache")
    with pytest.raises(RenderError) as plain:
        parse_stream(path.read_text(), source=str(path))
    assert cached.value.message == plain.value.message
    assert not (tmp_path / "cache").exists()


KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: demo}
spec:
  platform: kind
  applications: [{name: common}, {name: training-operator}]
"""


def test_generate_leaves_apply_nothing_to_parse(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """generate keeps each application's objects, parsed already, for the bundle that apply loads next."""
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KFDEF)
    kfdef = load_kfdef(app / "kfdef.yaml", catalog)
    generate(kfdef, catalog)
    parsed = {
        name: parse_stream((app / "rendered" / f"{name}.yaml").read_text(), source=name)
        for name in ("common", "training-operator")
    }

    def no_parse(text: str, *, source: str) -> list[dict[str, Any]]:
        raise AssertionError(f"parsed {source}")

    monkeypatch.setattr(rendered, "parse_stream", no_parse)
    bundle = load_bundle(kfdef, catalog)
    assert {name: list(objs) for name, objs in bundle.objects_by_app} == parsed
    assert sorted(p.name for p in (app / ".cache" / "rendered").iterdir()) == ["common.json", "training-operator.json"]
