"""Upstream Kubeflow's remote kustomize bases, resolved once, pinned, vendored and served from a mirror.

The inputs are upstream's own: the kubeflow/manifests v1.11.0 release and the three sources its kustomizations
fetch from GitHub (argo-workflows v3.7.3, lws v0.7.0, jobset v0.10.1; ../shared/fixtures). A real git server
(git's smart HTTP) and a real HTTP server on 127.0.0.1 serve them as GitHub would (kfctl_testbed): the git
sources as bare repositories tagged as upstream tagged them, and JobSet's release asset ``manifests.yaml`` as a
file built here from its ``config/default`` with kustomize — a stand-in for the real asset, which is built the
same way at release time (its sha256 differs from the real one's). The GitHub URLs reach them only through
``--mirror`` / ``spec.mirrors``, as a user's would; every other address is unreachable (a dead proxy).

The oracles are independent of kfctl: the commits are read from the served repositories' tags, the file's
sha256 from the served bytes, and kustomize's own remote fetching (pointed at the same git server with git's
``insteadOf``) renders the same bytes as kfctl's vendored directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kfctl_testbed import fileserver, gitserver, upstream_mirror
from upstream import shared_fixture

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.cli.main import cli
from kfctl.config.loader import load_kfdef
from kfctl.config.model import Mirror
from kfctl.errors import ConfigError, FetchError, KfctlError, RenderError
from kfctl.render.kustomize import UNRESTRICTED, find_kustomize
from kfctl.repos.remote_bases import reason

ARGO = "https://github.com/argoproj/argo-workflows"
JOBSET_URL = "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml"
RELEASE_URL = "https://github.com/kubeflow/manifests/archive/refs/tags/v1.11.0.tar.gz"
APPS = {
    "pipelines": "applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user",
    "trainer": "applications/trainer/overlays",
    "lws": "applications/trainer/upstream/third-party/leaderworkerset",
}


@pytest.fixture
def offline_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every address but 127.0.0.1 is unreachable: HTTP(S) goes to a proxy port nothing listens on."""
    dead = f"http://127.0.0.1:{_closed_port()}"
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(var, dead)
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def kustomize_argv() -> tuple[str, ...]:
    return find_kustomize().argv


def _build_mirror(root: Path, kustomize_argv: tuple[str, ...]) -> upstream_mirror.Mirror:
    """The remote bases' sources as GitHub serves them, plus the release tarball where GitHub serves it."""
    fixtures = shared_fixture("README.md").parent
    built = upstream_mirror.build(fixtures, root, kustomize=kustomize_argv)
    _evil_repo(built.root)
    return built


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, kustomize_argv: tuple[str, ...]) -> upstream_mirror.Mirror:
    """Shared by the tests that only read it."""
    return _build_mirror(tmp_path_factory.mktemp("mirror"), kustomize_argv)


@pytest.fixture
def own_mirror(tmp_path: Path, kustomize_argv: tuple[str, ...]) -> upstream_mirror.Mirror:
    """For a test that changes it (moves a tag)."""
    return _build_mirror(tmp_path / "mirror", kustomize_argv)


@pytest.fixture
def servers(mirror: upstream_mirror.Mirror) -> Iterator[tuple[str, str]]:
    """(git base URL, file base URL) of the running servers."""
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        yield f"http://127.0.0.1:{git_server.port}/", files.base


def write_kfdef(app: Path, git_base: str, file_base: str, apps: dict[str, str] = APPS) -> Path:
    """The KfDef a user behind a mirror writes: upstream's release by its GitHub URL, three mirror lines."""
    doc: dict[str, Any] = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"name": "upstream"},
        "spec": {
            "platform": "generic",
            "repos": [{"name": "manifests", "uri": RELEASE_URL}],
            "mirrors": [
                {"prefix": prefix, "location": location}
                for prefix, location in upstream_mirror.Mirror.mirrors(git_base, file_base)
            ],
            "applications": [
                {"name": name, "kustomizeConfig": {"repoRef": {"name": "manifests", "path": path}}}
                for name, path in apps.items()
            ],
        },
    }
    app.mkdir(parents=True, exist_ok=True)
    path = app / "kfdef.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def build(argv: tuple[str, ...], directory: Path, **env: str) -> str:
    out = subprocess.run(
        [*argv, *UNRESTRICTED, str(directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, **env},
    )
    return out.stdout


def uncommented_github_lines(app: Path) -> list[str]:
    found = []
    for top in ("kustomize", "vendor"):
        for path in sorted((app / top).rglob("kustomization.yaml")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "https://github.com" in line and not line.lstrip().startswith("#"):
                    found.append(f"{path.relative_to(app)}:{n}: {line}")
    return found


@pytest.mark.usefixtures("offline_world")
def test_upstream_remote_bases_are_pinned_vendored_and_build_without_the_network(
    tmp_path: Path,
    mirror: upstream_mirror.Mirror,
    kustomize_argv: tuple[str, ...],
    real_catalog: Catalog,
) -> None:
    app = tmp_path / "app"
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        kfdef_path = write_kfdef(app, f"http://127.0.0.1:{git_server.port}/", files.base)
        result = generate(load_kfdef(kfdef_path, real_catalog), real_catalog)
        served_git = git_server.requests
    assert result.applications == ("pipelines", "trainer", "lws")
    assert result.remote_bases == 5
    assert any("/argoproj/argo-workflows/" in r for r in served_git)
    assert any("/kubernetes-sigs/lws/" in r for r in served_git)

    # The lock pins each remote base: the commit its tag names in the served repository, the served file's digest.
    asset = (mirror.files_root / upstream_mirror.JOBSET_ASSET).read_bytes()
    argo = mirror.commits["argoproj/argo-workflows"]
    lock = yaml.safe_load((app / "kfdef.lock").read_text(encoding="utf-8"))
    assert lock["repos"] == [
        {
            "name": "manifests",
            "uri": RELEASE_URL,
            "kind": "archive",
            "sha256": "78af6b2a9578db248c3c4b52d75dafc640a2ed5c8ae9a43d5399a3e9b3704d08",
        }
    ]
    assert lock["remoteBases"] == [
        {
            "url": f"{ARGO}/manifests/base/crds/minimal?ref=v3.7.3",
            "kind": "git",
            "repo": ARGO,
            "ref": "v3.7.3",
            "commit": argo,
        },
        {
            "url": f"{ARGO}/manifests/base/workflow-controller?ref=v3.7.3",
            "kind": "git",
            "repo": ARGO,
            "ref": "v3.7.3",
            "commit": argo,
        },
        {
            "url": f"{ARGO}/manifests/cluster-install-no-crds/workflow-controller-rbac?ref=v3.7.3",
            "kind": "git",
            "repo": ARGO,
            "ref": "v3.7.3",
            "commit": argo,
        },
        {"url": JOBSET_URL, "kind": "file", "sha256": hashlib.sha256(asset).hexdigest(), "size": len(asset)},
        {
            "url": "https://github.com/kubernetes-sigs/lws//config/default?ref=v0.7.0",
            "kind": "git",
            "repo": "https://github.com/kubernetes-sigs/lws",
            "ref": "v0.7.0",
            "commit": mirror.commits["kubernetes-sigs/lws"],
        },
    ]

    # Nothing in the app dir points at GitHub any more but comments, and each kustomize dir builds (as its
    # header says) to the rendered file, byte for byte, with the servers gone and no network.
    assert uncommented_github_lines(app) == []
    for name in APPS:
        header = (app / "kustomize" / name / "kustomization.yaml").read_text(encoding="utf-8")
        assert "`kustomize build --load-restrictor LoadRestrictionsNone` of this" in header
        assert build(kustomize_argv, app / "kustomize" / name) == (app / "rendered" / f"{name}.yaml").read_text()
    jobset = yamlio.safe_load_all((app / "rendered" / "trainer.yaml").read_text(encoding="utf-8"))
    images = {
        c["image"] for o in jobset if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert "registry.k8s.io/jobset/jobset:v0.10.1" in images

    # The mirror is gone: --offline works from the cache and the lock, and --check finds nothing stale.
    again = generate(load_kfdef(kfdef_path, real_catalog), real_catalog, offline=True)
    assert (again.changed, again.fetched, again.remote_bases) == ((), (), 5)
    generate(load_kfdef(kfdef_path, real_catalog), real_catalog, check=True)


@pytest.mark.usefixtures("offline_world")
def test_kustomize_fetching_the_remote_bases_itself_renders_the_same_bytes(
    tmp_path: Path, mirror: upstream_mirror.Mirror, kustomize_argv: tuple[str, ...], real_catalog: Catalog
) -> None:
    """The oracle: kustomize's own remote loader, pointed at the same git server by git's insteadOf (the
    mechanism a user would reach for by hand), on upstream's unmodified tree."""
    tree = tmp_path / "upstream"
    with tarfile.open(shared_fixture("kubeflow-manifests-v1.11.0.tar.gz")) as tf:
        tf.extractall(tree, filter="data")
    apps = {k: v for k, v in APPS.items() if k != "trainer"}  # a release asset is a file, not a git repo
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        base = f"http://127.0.0.1:{git_server.port}/"
        kfdef_path = write_kfdef(tmp_path / "app", base, files.base, apps)
        generate(load_kfdef(kfdef_path, real_catalog), real_catalog)
        config = tmp_path / "gitconfig"
        config.write_text(f'[url "{base}"]\n\tinsteadOf = https://github.com/\n', encoding="utf-8")
        for name, path in apps.items():
            theirs = build(kustomize_argv, tree / "manifests-1.11.0" / path, GIT_CONFIG_GLOBAL=str(config))
            assert theirs == (tmp_path / "app" / "rendered" / f"{name}.yaml").read_text(encoding="utf-8"), name


@pytest.mark.usefixtures("offline_world")
def test_a_moved_tag_is_refused_naming_both_commits_and_refresh_repins_it(
    tmp_path: Path, own_mirror: upstream_mirror.Mirror, real_catalog: Catalog
) -> None:
    mirror = own_mirror
    app = tmp_path / "app"
    apps = {"pipelines": APPS["pipelines"]}
    bare = mirror.git_root / "argoproj" / "argo-workflows"
    old = mirror.commits["argoproj/argo-workflows"]
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        kfdef_path = write_kfdef(app, f"http://127.0.0.1:{git_server.port}/", files.base, apps)
        generate(load_kfdef(kfdef_path, real_catalog), real_catalog)
        lock_before = (app / "kfdef.lock").read_text(encoding="utf-8")
        new = upstream_mirror.move_tag(bare, "v3.7.3")
        # With its pinned tree in the cache, nothing is asked of the server: the pin holds.
        assert generate(load_kfdef(kfdef_path, real_catalog), real_catalog).changed == ()
        # A fresh checkout (lock committed, cache not) fetches again and finds the tag moved.
        cache = app / ".cache" / "remote"
        for child in cache.iterdir():
            subprocess.run(["rm", "-rf", str(child)], check=True)
        with pytest.raises(ConfigError) as info:
            generate(load_kfdef(kfdef_path, real_catalog), real_catalog)
        assert info.value.message == (
            'application pipelines: repo "manifests": applications/pipeline/upstream/third-party/argo/base/'
            f"kustomization.yaml:5: remote base {ARGO}/manifests/base/workflow-controller?ref=v3.7.3: ref v3.7.3 "
            f"of {ARGO} now resolves to commit {new}, but kfdef.lock pins {old}"
        )
        assert info.value.hint == (
            "nothing was changed; if the ref moved on purpose, run `kfctl generate --refresh` to pin the new commit, "
            "or write the pinned commit as the ref (?ref=COMMIT) to keep the old content"
        )
        assert (app / "kfdef.lock").read_text(encoding="utf-8") == lock_before
        refreshed = generate(load_kfdef(kfdef_path, real_catalog), real_catalog, refresh=True)
    assert refreshed.repinned == (f"remote repo {ARGO}: ref v3.7.3 moved from {old} to {new}",)
    lock = yaml.safe_load((app / "kfdef.lock").read_text(encoding="utf-8"))
    assert {e["commit"] for e in lock["remoteBases"]} == {new}
    assert (app / "vendor" / "remote" / "github.com" / "argoproj" / f"argo-workflows@{new[:12]}").is_dir()
    assert not (app / "vendor" / "remote" / "github.com" / "argoproj" / f"argo-workflows@{old[:12]}").exists()


def test_the_cli_takes_mirrors_from_the_command_line(
    tmp_path: Path, mirror: upstream_mirror.Mirror, servers: tuple[str, str], offline_world: None
) -> None:
    git_base, file_base = servers
    app = tmp_path / "app"
    app.mkdir()
    (app / "kfdef.yaml").write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata: {name: lws}\nspec:\n  platform: generic\n"
        f"  repos: [{{name: manifests, uri: '{RELEASE_URL}'}}]\n"
        f"  applications: [{{name: lws, kustomizeConfig: {{repoRef: {{name: manifests, path: '{APPS['lws']}'}}}}}}]\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli,
        [
            "generate",
            str(app),
            "--mirror",
            f"https://github.com/kubeflow/manifests/archive/={file_base}/kubeflow/manifests/archive/",
            "--mirror",
            f"https://github.com/={git_base}",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = yaml.safe_load(result.stdout)
    assert (out["remoteBases"], out["fetched"]) == (
        1,
        ["manifests", "https://github.com/kubernetes-sigs/lws@v0.7.0"],
    )


# -- bad input: one error naming the application, the kustomization file and line, the URL, and what to do ----

BAD_KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- {url}\n"
WHERE = 'application web: repo "web": apps/web/kustomization.yaml:4'
FETCH_HINT = (
    "check the URL and its ref; without network, map it to a mirror (`kfctl generate --mirror PREFIX=LOCATION` "
    "or spec.mirrors in the KfDef), or run with --offline from a filled cache (.cache/remote/ and the lock file)"
)
BAD = [
    (
        "repository-missing-on-the-mirror",
        "https://github.com/org/missing//base?ref=v1",
        "{git}",
        FetchError,
        "remote base https://github.com/org/missing//base?ref=v1 cannot be fetched from {git}org/missing "
        "(mirror https://github.com/ = {git}) at ref v1: the repository was not found",
        "check that the mirror holds {git}org/missing",
    ),
    (
        "ref-that-does-not-exist",
        f"{ARGO}//manifests/base/crds/minimal?ref=v9.9.9",
        "{git}",
        FetchError,
        f"remote base {ARGO}//manifests/base/crds/minimal?ref=v9.9.9 cannot be fetched from "
        "{git}argoproj/argo-workflows (mirror https://github.com/ = {git}) at ref v9.9.9: "
        "the ref does not exist in the repository",
        "check that the mirror holds {git}argoproj/argo-workflows",
    ),
    (
        "path-not-in-the-repository",
        f"{ARGO}//manifests/nowhere?ref=v3.7.3",
        "{git}",
        RenderError,
        f'remote base {ARGO}//manifests/nowhere?ref=v3.7.3: path "manifests/nowhere" does not exist in {ARGO} at '
        "{argo12}",
        "check the path in the URL (after the repository, or after //)",
    ),
    (
        "connection-refused",
        f"{ARGO}//manifests?ref=v3.7.3",
        "{refused}",
        FetchError,
        f"remote base {ARGO}//manifests?ref=v3.7.3 cannot be fetched from {{refused}}argoproj/argo-workflows "
        "(mirror https://github.com/ = {refused}) at ref v3.7.3: the connection was refused",
        "check that the mirror holds {refused}argoproj/argo-workflows",
    ),
    (
        "credentials-asked",
        f"{ARGO}//manifests?ref=v3.7.3",
        "{files}/auth/",
        FetchError,
        f"remote base {ARGO}//manifests?ref=v3.7.3 cannot be fetched from {{files}}/auth/argoproj/argo-workflows "
        "(mirror https://github.com/ = {files}/auth/) at ref v3.7.3: the server asks for credentials "
        "(authentication required)",
        "check that the mirror holds {files}/auth/argoproj/argo-workflows",
    ),
    (
        "timeout-from-the-url",
        f"{ARGO}//manifests?ref=v3.7.3&timeout=2s",
        "{files}/stall/",
        FetchError,
        f"remote base {ARGO}//manifests?ref=v3.7.3&timeout=2s cannot be fetched from "
        "{files}/stall/argoproj/argo-workflows (mirror https://github.com/ = {files}/stall/) at ref v3.7.3: "
        "it timed out",
        "check that the mirror holds {files}/stall/argoproj/argo-workflows",
    ),
    (
        "file-missing",
        "https://github.com/kubernetes-sigs/jobset/releases/download/v9.9.9/manifests.yaml",
        "{files}/",
        FetchError,
        "remote base https://github.com/kubernetes-sigs/jobset/releases/download/v9.9.9/manifests.yaml cannot be "
        "fetched from {files}/kubernetes-sigs/jobset/releases/download/v9.9.9/manifests.yaml "
        "(mirror https://github.com/ = {files}/): not found (HTTP 404)",
        "check that the mirror holds {files}/kubernetes-sigs/jobset/releases/download/v9.9.9/manifests.yaml",
    ),
    (
        "no-mirror-and-no-network",
        "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
        None,
        FetchError,
        "remote base https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml cannot be "
        "fetched: the connection was refused",
        FETCH_HINT,
    ),
    (
        "symlink-out-of-the-fetched-tree",
        "https://github.com/org/evil//base?ref=v1",
        "{git}",
        ConfigError,
        "remote base https://github.com/org/evil//base?ref=v1: unsafe archive member 'base/passwd': "
        "symlink '/etc/passwd' points outside the tree",
        "nothing was vendored; a remote base must not hold a symlink leading out of its repository",
    ),
    (
        "not-a-kustomize-url",
        "https://github.com/org?ref=v1",
        None,
        ConfigError,
        "remote base 'https://github.com/org?ref=v1': expected org/repo after the host",
        "write it as kustomize does: https://host/org/repo//path?ref=TAG, or https://host/…/file.yaml",
    ),
]


def write_local_kfdef(app: Path) -> None:
    """A KfDef whose one application is APPDIR/upstream/apps/web, a local repo the test writes."""
    (app / "kfdef.yaml").write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata: {name: web}\nspec:\n  platform: generic\n"
        "  repos: [{name: web, uri: ./upstream}]\n"
        "  applications: [{name: web, kustomizeConfig: {repoRef: {name: web, path: apps/web}}}]\n",
        encoding="utf-8",
    )


def _evil_repo(root: Path) -> None:
    """A repository whose base holds a symlink to /etc/passwd: git stores it; kfctl must not vendor it."""
    work = root / "evil-work"
    (work / "base").mkdir(parents=True)
    (work / "base" / "kustomization.yaml").write_text("resources: [passwd]\n", encoding="utf-8")
    (work / "base" / "passwd").symlink_to("/etc/passwd")
    gitserver.git("init", "--quiet", "--initial-branch=main", cwd=work)
    gitserver.git("add", "--all", cwd=work)
    gitserver.git("commit", "--quiet", "-m", "v1", cwd=work)
    gitserver.git("tag", "v1", cwd=work)
    gitserver.git("clone", "--quiet", "--bare", str(work), str(root / "git" / "org" / "evil"))


@pytest.mark.parametrize(
    ("url", "mirror_to", "error", "message", "hint"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_a_remote_base_that_cannot_be_had_is_one_error_and_writes_nothing(
    tmp_path: Path,
    mirror: upstream_mirror.Mirror,
    catalog: Catalog,
    offline_world: None,
    url: str,
    mirror_to: str | None,
    error: type[KfctlError],
    message: str,
    hint: str,
) -> None:
    behaviour = fileserver.Behaviour(auth=("/auth/",), stall=("/stall/",))
    app = tmp_path / "app"
    (app / "upstream" / "apps" / "web").mkdir(parents=True)
    (app / "upstream" / "apps" / "web" / "kustomization.yaml").write_text(BAD_KUSTOMIZATION.format(url=url))
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root, behaviour) as files:
        values = {
            "git": f"http://127.0.0.1:{git_server.port}/",
            "files": files.base,
            "refused": f"http://127.0.0.1:{_closed_port()}/",
            "argo12": mirror.commits["argoproj/argo-workflows"][:12],
        }
        mirrors = () if mirror_to is None else (Mirror("https://github.com/", mirror_to.format(**values)),)
        write_local_kfdef(app)
        with pytest.raises(error) as info:
            generate(load_kfdef(app / "kfdef.yaml", catalog), catalog, mirrors=mirrors)
    assert type(info.value) is error
    assert info.value.message == f"{WHERE}: {message.format(**values)}"
    assert info.value.hint == hint.format(**values)
    left = {p.name for p in app.iterdir()}
    assert not left & {"kustomize", "rendered", "vendor", "kfdef.lock"}, left
    assert not [n for n in left if n.startswith(".kfctl-tmp-")]
    remote_cache = app / ".cache" / "remote"  # complete, content-addressed fetches may stay; nothing half-done
    assert not remote_cache.exists() or not [p for p in remote_cache.iterdir() if p.name.startswith(".tmp-")]


REASONS = [
    (
        "dns",
        "fatal: unable to access 'https://github.com/a/b/': Could not resolve host: github.com",
        "the host name does not resolve (DNS)",
    ),
    (
        "refused",
        "fatal: unable to access 'http://127.0.0.1:1/a/': Failed to connect to 127.0.0.1 port 1",
        "the connection was refused",
    ),
    ("no-ref", "fatal: couldn't find remote ref v9", "the ref does not exist in the repository"),
    (
        "auth",
        "fatal: could not read Username for 'https://h': terminal prompts disabled",
        "the server asks for credentials (authentication required)",
    ),
    ("unknown", "fatal: something new", "fatal: something new"),
]


@pytest.mark.parametrize(("stderr", "expected"), [c[1:] for c in REASONS], ids=[c[0] for c in REASONS])
def test_what_git_said_in_a_persons_words(stderr: str, expected: str) -> None:
    """DNS cannot be failed here without asking a resolver off this machine, so its row is git's own words."""
    assert reason(RenderError("x: git fetch failed (exit code 128)", details=[stderr])) == expected


def test_offline_names_every_base_it_lacks(tmp_path: Path, catalog: Catalog) -> None:
    app = tmp_path / "app"
    (app / "upstream" / "apps" / "web").mkdir(parents=True)
    (app / "upstream" / "apps" / "web" / "kustomization.yaml").write_text(
        f"resources:\n- {ARGO}//manifests?ref=v3.7.3\n- {JOBSET_URL}\n", encoding="utf-8"
    )
    write_local_kfdef(app)
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(app / "kfdef.yaml", catalog), catalog, offline=True)
    assert info.value.message == "--offline, but 2 remote base(s) cannot be had without the network"
    assert info.value.details == [
        f'application web: repo "web": apps/web/kustomization.yaml:2: remote base {ARGO}//manifests?ref=v3.7.3 '
        "is not pinned in kfdef.lock",
        f'application web: repo "web": apps/web/kustomization.yaml:3: remote base {JOBSET_URL} '
        "is not pinned in kfdef.lock",
    ]
    assert not re.search(r"Traceback", str(info.value))


LIMIT_CASES = [
    ("within", {"a.yaml": 10, "b/c.yaml": 10}, 3, 100, None),
    (
        "too-many-files",
        {"a.yaml": 1, "b.yaml": 1, "c.yaml": 1},
        2,
        100,
        "the fetched tree is too large (more than 2 files)",
    ),
    ("too-many-bytes", {"a.yaml": 60, "b.yaml": 60}, 10, 100, "the fetched tree is too large (more than 100 bytes)"),
]


@pytest.mark.parametrize(
    ("files", "max_members", "max_bytes", "message"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
def test_a_fetched_tree_is_held_to_the_archive_limits(
    tmp_path: Path, files: dict[str, int], max_members: int, max_bytes: int, message: str | None
) -> None:
    from kfctl.repos.archive import Limits, check_tree_limits

    tree = tmp_path / "tree"
    for name, size in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(b"x" * size)
    limits = Limits(max_bytes=max_bytes, max_members=max_members)
    if message is None:
        check_tree_limits(tree, what="remote base X", limits=limits)
        return
    with pytest.raises(ConfigError) as info:
        check_tree_limits(tree, what="remote base X", limits=limits)
    assert info.value.message == f"remote base X: {message}"
    assert info.value.hint == (
        "nothing was vendored; point the URL at a repository (or mirror) holding the manifests only"
    )
