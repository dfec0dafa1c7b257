"""Mirrors map a URL prefix to another location, as git's insteadOf and Go's GOPROXY do: a table of mirrors and
URLs in, where the bytes are fetched from out. Also the --mirror flag's parsing and the KfDef's spec.mirrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kfctl.catalog.model import Catalog
from kfctl.config.loader import parse_kfdef
from kfctl.config.model import Mirror
from kfctl.errors import ConfigError, UsageError
from kfctl.repos.mirror import Mapped, Mirrors, parse_flag

GITHUB = Mirror("https://github.com/", "http://127.0.0.1:8080/git/")
RELEASES = Mirror("https://github.com/kubernetes-sigs/jobset/releases/", "/srv/assets/jobset/")
FILE = Mirror("https://example.com/", "file:///srv/git")

CASES = [
    (
        "unmapped",
        (GITHUB,),
        "https://gitlab.com/a/b",
        Mapped("https://gitlab.com/a/b", "https://gitlab.com/a/b", False),
    ),
    (
        "git-base-to-http",
        (GITHUB,),
        "https://github.com/argoproj/argo-workflows",
        Mapped(
            "https://github.com/argoproj/argo-workflows",
            "http://127.0.0.1:8080/git/argoproj/argo-workflows",
            False,
            GITHUB,
        ),
    ),
    (
        "longest-prefix-wins-local-directory",
        (GITHUB, RELEASES),
        "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
        Mapped(
            "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
            "/srv/assets/jobset/download/v0.10.1/manifests.yaml",
            True,
            RELEASES,
        ),
    ),
    (
        "file-url-joined-with-slash",
        (FILE,),
        "https://example.com/team/repo.git",
        Mapped("https://example.com/team/repo.git", "file:///srv/git/team/repo.git", True, FILE),
    ),
]


@pytest.mark.parametrize(("mirrors", "url", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_map(mirrors: tuple[Mirror, ...], url: str, expected: Mapped) -> None:
    assert Mirrors(mirrors).map(url) == expected


def test_the_command_line_comes_before_the_kfdef_for_the_same_prefix() -> None:
    flag = Mirror("https://github.com/", "/mnt/usb/github/")
    mirrors = Mirrors.of([flag], [GITHUB, RELEASES])
    assert mirrors.entries == (flag, RELEASES)
    assert mirrors.map("https://github.com/a/b").location == "/mnt/usb/github/a/b"


FLAGS = [
    ("url", "https://github.com/=http://mirror/github/", Mirror("https://github.com/", "http://mirror/github/")),
    ("relative-dir", "https://github.com/=./mirror", Mirror("https://github.com/", "{cwd}/mirror")),
    ("prefix-with-equals", "https://x/?a=b=/srv/x", Mirror("https://x/?a=b", "/srv/x")),
    ("bare-relative-dir", "https://github.com/=mirror", Mirror("https://github.com/", "{cwd}/mirror")),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in FLAGS], ids=[c[0] for c in FLAGS])
def test_flag(tmp_path: Path, text: str, expected: Mirror) -> None:
    want = Mirror(expected.prefix, expected.location.format(cwd=tmp_path))
    assert parse_flag(text, base_dir=tmp_path) == want


@pytest.mark.parametrize("text", ["https://github.com/", "=/srv", "https://github.com/="])
def test_bad_flag_is_a_usage_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_flag(text, base_dir=tmp_path)
    assert info.value.hint == (
        "write --mirror URL_PREFIX=LOCATION, e.g. --mirror https://github.com/=http://mirror.internal/github/"
    )


KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {{name: demo}}
spec:
  platform: generic
  mirrors:
{mirrors}
  applications: []
"""


def test_kfdef_mirrors_resolve_relative_directories_from_the_kfdef(tmp_path: Path, catalog: Catalog) -> None:
    text = KFDEF.format(
        mirrors="  - {prefix: 'https://github.com/', location: mirror/github}\n"
        "  - {prefix: 'https://example.com/', location: 'http://127.0.0.1:9/'}"
    )
    kfdef = parse_kfdef(text, path=tmp_path / "kfdef.yaml", catalog=catalog)
    assert kfdef.mirrors == (
        Mirror("https://github.com/", str(tmp_path.resolve() / "mirror" / "github")),
        Mirror("https://example.com/", "http://127.0.0.1:9/"),
    )


def test_kfdef_mirror_mistakes_are_listed_with_their_field(tmp_path: Path, catalog: Catalog) -> None:
    text = KFDEF.format(
        mirrors="  - {prefix: 'https://github.com/', location: /a}\n"
        "  - {prefix: 'https://github.com/', location: /b}\n"
        "  - {prefix: 'https://x/', locaton: /c}"
    )
    with pytest.raises(ConfigError) as info:
        parse_kfdef(text, path=tmp_path / "kfdef.yaml", catalog=catalog)
    kfdef = tmp_path / "kfdef.yaml"
    assert info.value.details == [
        f'{kfdef}:8:6 spec.mirrors[1].prefix: prefix "https://github.com/" is mirrored twice',
        f"{kfdef}:9:5 spec.mirrors[2]: location is required",
        f'{kfdef}:9:28 spec.mirrors[2].locaton: unknown field "locaton" (did you mean "location"?)',
    ]
