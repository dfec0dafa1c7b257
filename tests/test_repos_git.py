"""Git repos as manifest sources: a bare repository made in the test with two tags of different content.

Switching the ref changes the render and the lock file's commit; with --offline the next generate runs
with git off PATH and the git wrapper counted, and makes no call. Also: what each kind of uri is taken
for, and what is refused, as a table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.config.model import Repo
from kfctl.errors import ConfigError, RenderError, StaleOutputError
from kfctl.render import git
from kfctl.repos.source import classify

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: generic
  repos:
    - name: upstream
      uri: {uri}
      ref: "{ref}"
  applications:
    - name: web
      kustomizeConfig:
        repoRef: {{name: upstream, path: apps/web}}
"""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@127.0.0.1",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@127.0.0.1",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def sh_git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def bare_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A bare repo with tags v1 and v2 (annotated) whose ConfigMap says "v1" / "v2"; tag → commit."""
    work = tmp_path / "work"
    (work / "apps" / "web").mkdir(parents=True)
    sh_git("init", "-q", "-b", "main", cwd=work)
    commits: dict[str, str] = {}
    for version in ("v1", "v2"):
        (work / "apps" / "web" / "kustomization.yaml").write_text("resources: [configmap.yaml]\n")
        (work / "apps" / "web" / "configmap.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\n"
            f"data: {{version: {version}}}\n"
        )
        sh_git("add", "-A", cwd=work)
        sh_git("commit", "-q", "-m", version, cwd=work)
        sh_git("tag", "-a", version, "-m", version, cwd=work)
        commits[version] = sh_git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "upstream.git"
    sh_git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    return bare, commits


def write_kfdef(app: Path, uri: str, ref: str) -> Path:
    app.mkdir(parents=True, exist_ok=True)
    path = app / "kfdef.yaml"
    path.write_text(KFDEF.format(uri=uri, ref=ref))
    return path


def version(app: Path) -> str:
    docs = [d for d in yamlio.safe_load_all((app / "rendered" / "web.yaml").read_text()) if d]
    return str(docs[0]["data"]["version"])


def locked_commit(app: Path) -> str:
    doc = yaml.safe_load((app / "kfdef.lock").read_text())
    return str(doc["repos"][0]["commit"])


def test_switching_the_ref_changes_the_render_and_offline_needs_no_git(
    tmp_path: Path, bare_repo: tuple[Path, dict[str, str]], catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare, commits = bare_repo
    app = tmp_path / "demo"
    uri = f"git+file://{bare}"
    path = write_kfdef(app, uri, "v1")
    kfdef_text = path.read_text()
    result = generate(load_kfdef(path, catalog), catalog)
    assert version(app) == "v1"
    assert result.fetched == ("upstream",)
    assert locked_commit(app) == commits["v1"]
    assert (
        (app / "kfdef.lock")
        .read_text()
        .endswith(f"- name: upstream\n  uri: {uri}\n  kind: git\n  ref: v1\n  commit: {commits['v1']}\n")
    )
    assert not (app / ".cache" / "repos" / f"upstream-{commits['v1'][:16]}" / ".git").exists()
    assert path.read_text() == kfdef_text

    path = write_kfdef(app, uri, "v2")
    generate(load_kfdef(path, catalog), catalog)
    assert version(app) == "v2"
    assert locked_commit(app) == commits["v2"]

    # Back to v1, offline: the cache has v1's tree but the lock says v2, so the ref must be resolved → refused.
    path = write_kfdef(app, uri, "v1")
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog, offline=True)
    assert info.value.message == (
        f'repo "upstream" ({uri}) changed ref since the lock file was written (locked: v2, now: v1), '
        "and --offline forbids fetching it"
    )

    # v2 again, offline, with git gone from PATH and every git call counted.
    path = write_kfdef(app, uri, "v2")
    calls: list[list[str]] = []
    real_run = git.run_git

    def counting(args: list[str], **kw: object) -> str:
        calls.append(list(args))
        return real_run(args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(git, "run_git", counting)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = shutil.which("kubectl") or shutil.which("kustomize")
    assert kubectl
    (bin_dir / Path(kubectl).name).symlink_to(os.path.realpath(kubectl))
    monkeypatch.setenv("PATH", str(bin_dir))
    assert shutil.which("git") is None
    shutil.rmtree(app / "rendered")
    again = generate(load_kfdef(path, catalog), catalog, offline=True)
    assert calls == []
    assert again.fetched == ()
    assert version(app) == "v2"
    assert locked_commit(app) == commits["v2"]

    # Without --offline, and without a lock match, the missing git is a clear render error.
    (app / "kfdef.lock").unlink()
    with pytest.raises(RenderError) as err:
        generate(load_kfdef(path, catalog), catalog, refresh=True)
    assert err.value.message == "git is not on PATH; it is needed to fetch git repos"


def test_a_full_commit_ref_is_its_own_pin_and_a_short_one_resolves(
    tmp_path: Path, bare_repo: tuple[Path, dict[str, str]], catalog: Catalog
) -> None:
    bare, commits = bare_repo
    app = tmp_path / "demo"
    path = write_kfdef(app, f"git+file://{bare}", commits["v1"][:10])
    generate(load_kfdef(path, catalog), catalog)
    assert version(app) == "v1"
    assert locked_commit(app) == commits["v1"]
    other = tmp_path / "other"
    path = write_kfdef(other, f"git+file://{bare}", commits["v2"])
    generate(load_kfdef(path, catalog), catalog)
    assert version(other) == "v2"


def test_a_missing_ref_names_the_repo_and_quotes_git(
    tmp_path: Path, bare_repo: tuple[Path, dict[str, str]], catalog: Catalog
) -> None:
    bare, _ = bare_repo
    app = tmp_path / "demo"
    path = write_kfdef(app, f"git+file://{bare}", "v9")
    with pytest.raises(RenderError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert info.value.message == f'repo "upstream" (git+file://{bare}): git fetch failed (exit code 128)'
    assert info.value.details == ["fatal: couldn't find remote ref v9"]
    assert list((app / ".cache" / "repos").iterdir()) == []
    assert not (app / "kfdef.lock").exists()


def test_a_ref_that_looks_like_an_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RenderError) as info:
        git.fetch_tree("file:///nonexistent", "--upload-pack=touch /tmp/x", tmp_path / "t", what="w")
    assert info.value.message == "w: ref '--upload-pack=touch /tmp/x' may not start with '-'"
    assert not (tmp_path / "t").exists()


BASE = Path("/srv/app")
KFDEF_PATH = BASE / "kfdef.yaml"


@pytest.mark.parametrize(
    ("uri", "sha256", "ref", "kind", "location"),
    [
        pytest.param("./mine", None, None, "directory", "/srv/app/mine", id="relative-dir"),
        pytest.param("/abs/dir", None, None, "directory", "/abs/dir", id="absolute-dir"),
        pytest.param("file:///abs/dir", None, None, "directory", "/abs/dir", id="file-url-dir"),
        pytest.param("m.tar.gz", "a" * 64, None, "archive", "/srv/app/m.tar.gz", id="relative-archive"),
        pytest.param("file:///x/m.zip", None, None, "archive", "/x/m.zip", id="file-url-zip"),
        pytest.param("https://h.example/a/v1.tgz", None, None, "archive", "https://h.example/a/v1.tgz", id="https"),
        pytest.param("git+https://h.example/org/m", None, "v1", "git", "https://h.example/org/m", id="git+https"),
        pytest.param("git+file:///r/m.git", None, "main", "git", "file:///r/m.git", id="git+file"),
        pytest.param("https://h.example/org/m.git", None, None, "git", "https://h.example/org/m.git", id="dot-git"),
        pytest.param("../m.git", None, "v1", "git", "/srv/app/../m.git", id="relative-git"),
    ],
)
def test_uri_kinds(uri: str, sha256: str | None, ref: str | None, kind: str, location: str) -> None:
    source = classify(Repo("r", uri, sha256, ref), BASE, kfdef_path=KFDEF_PATH)
    assert (source.kind, source.location) == (kind, location)


KINDS_HINT_START = "a repo uri is a local directory"


@pytest.mark.parametrize(
    ("uri", "sha256", "ref", "message"),
    [
        pytest.param("https://h.example/org/m", None, None, "cannot tell what 'https://h.example/org/m' is", id="http"),
        pytest.param(
            "ftp://h.example/m.tgz", None, None, "unsupported uri scheme 'ftp' in 'ftp://h.example/m.tgz'", id="ftp"
        ),
        pytest.param("git+ext::sh -c x", None, None, "unsupported git URL 'git+ext::sh -c x'", id="git-ext"),
        pytest.param(
            "./m.tgz",
            None,
            "v1",
            "ref is only meaningful for a git repo, and './m.tgz' is an archive",
            id="ref-archive",
        ),
        pytest.param(
            "git+https://h.example/m",
            "a" * 64,
            None,
            "sha256 pins an archive, and 'git+https://h.example/m' is a git repo",
            id="sha-git",
        ),
        pytest.param("./dir", "a" * 64, None, "sha256 pins an archive, and './dir' is a local directory", id="sha-dir"),
    ],
)
def test_uri_errors(uri: str, sha256: str | None, ref: str | None, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        classify(Repo("r", uri, sha256, ref), BASE, kfdef_path=KFDEF_PATH)
    assert info.value.message == f'{KFDEF_PATH}: repo "r": {message}'


def test_repo_names_that_are_not_plain_names_are_refused(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "demo"
    path = write_kfdef(app, "./x", "v1")
    text = KFDEF.format(uri="./x", ref="v1").replace("upstream", '"../../up"')
    path.write_text(text.replace('      ref: "v1"\n', ""))
    with pytest.raises(ConfigError) as info:
        load_kfdef(path, catalog)
    assert info.value.details == [
        f'{path}:8:7 spec.repos[0].name: repo name "../../up" may only use letters, digits, ".", "_" and "-" '
        "(it names a directory)"
    ]


def test_check_reports_a_stale_lock_file(
    tmp_path: Path, bare_repo: tuple[Path, dict[str, str]], catalog: Catalog
) -> None:
    bare, _ = bare_repo
    app = tmp_path / "demo"
    path = write_kfdef(app, f"git+file://{bare}", "v1")
    generate(load_kfdef(path, catalog), catalog)
    assert generate(load_kfdef(path, catalog), catalog, check=True).changed == ()
    (app / "kfdef.lock").unlink()  # rendered output committed, the lock forgotten
    with pytest.raises(StaleOutputError) as info:
        generate(load_kfdef(path, catalog), catalog, check=True)
    assert info.value.details == ["kfdef.lock"]
    assert not (app / "kfdef.lock").exists()  # --check writes nothing
