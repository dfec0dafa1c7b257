"""The two ways kfctl writes objects as YAML documents (kfctl.app.export).

dump_documents writes files (the export, the plugin's files): PyYAML's pure-Python emitter, the same bytes on
every machine. stream_documents writes what a program reads (`kfctl generate --stdout`, which Argo CD's plugin
runs on every comparison): libyaml's emitter when PyYAML has it, which folds long double-quoted strings
elsewhere. The oracle is PyYAML's loader: both must read back as the very objects given.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kfctl.app.export import dump_documents, stream_documents

# A multi-line string with a trailing space cannot be a literal block, so it is double-quoted, and a long one is
# folded: where libyaml folds it differs from the pure-Python emitter (seen in upstream's istio sidecar template).
LONG_QUOTED = "".join(f"line {i} with a trailing space \n" for i in range(60))
OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"script": "set -e\necho ok\n"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"template": LONG_QUOTED}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {"a": "yes", "b": "0123", "c": "null", "d": "", "e": "é ☃"}},
        "data": {"n": "1", "list": "- x"},
        "binaryData": None,
        "extra": [1, 2.5, True, None, {"k": ["v"]}],
    },
]


@pytest.mark.parametrize("write", [dump_documents, stream_documents])
def test_each_object_reads_back_as_itself_one_document_each(write: Any) -> None:
    text = write(OBJECTS)
    assert text.startswith("---\n") and text.count("---\n") == len(OBJECTS)
    assert list(yaml.safe_load_all(text)) == OBJECTS


def test_files_keep_multi_line_strings_as_literal_blocks_and_their_keys_in_order() -> None:
    assert dump_documents([OBJECTS[0]]) == (
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  script: |\n    set -e\n    echo ok\n"
    )


def test_a_stream_reads_as_the_same_objects_as_the_files_where_its_bytes_may_differ() -> None:
    assert list(yaml.safe_load_all(stream_documents(OBJECTS))) == list(yaml.safe_load_all(dump_documents(OBJECTS)))


_KEYS = st.text(min_size=1, max_size=12)
_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=300)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=6), max_size=3))
def test_any_json_like_objects_read_back_as_themselves_from_a_stream(objects: list[dict[str, Any]]) -> None:
    assert list(yaml.safe_load_all(stream_documents(objects))) == objects
