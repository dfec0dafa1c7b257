"""A vendored kustomization names its remote bases' local copies: only the entry's scalar changes (comments,
quoting and the other entries stay byte for byte) and a header says what each entry was."""

from __future__ import annotations

import pytest

from kfctl.repos.kustomization_refs import Entry, remote_entries, rewrite

URL = "https://github.com/argoproj/argo-workflows/manifests/base/crds/minimal?ref=v3.7.3"
LOCAL = "../../remote/github.com/argoproj/argo-workflows@2451c4a2d98b/manifests/base/crds/minimal"
NOTE = "kfctl generate vendored the remote bases of this file (the lock file pins each):"
HEADER = f"# {NOTE}\n#   resources: {URL}\n#     -> {LOCAL}\n"

CASES = [
    (
        "block-list-keeps-comments",
        f"# upstream's comment\nresources:\n- ../base # local\n- {URL}\npatches:\n- path: p.yaml\n",
        f"{HEADER}# upstream's comment\nresources:\n- ../base # local\n- {LOCAL}\npatches:\n- path: p.yaml\n",
    ),
    (
        "quoted-entry",
        f'resources:\n  - "{URL}"\n',
        f"{HEADER}resources:\n  - {LOCAL}\n",
    ),
    (
        # PyYAML (YAML 1.1) needs a URL in a flow list quoted; kustomize's parser takes it either way.
        "flow-list",
        f"resources: [../base, '{URL}']\n",
        f"{HEADER}resources: [../base, {LOCAL}]\n",
    ),
    (
        "a-url-in-a-patch-is-no-base",
        f"patches:\n- patch: |-\n    value: {URL}\n",
        f"patches:\n- patch: |-\n    value: {URL}\n",
    ),
    ("not-yaml", "resources: [\n", "resources: [\n"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rewrite(text: str, expected: str) -> None:
    assert rewrite(text, {URL: LOCAL}, note=NOTE) == expected


def test_entries_name_field_and_line() -> None:
    text = f"resources:\n- ../base\ncomponents:\n  - git@github.com:org/c.git\nbases:\n- {URL}\n"
    assert [(e.field, e.value, e.line) for e in remote_entries(text)] == [
        ("components", "git@github.com:org/c.git", 4),
        ("bases", URL, 6),
    ]
    assert isinstance(remote_entries(text)[0], Entry)
