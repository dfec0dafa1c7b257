"""A mirror of the remote bases upstream Kubeflow's kustomizations fetch, built from ../shared/fixtures.

kubeflow/manifests v1.11.0 names three upstream sources by URL (see the fixtures' README):
argo-workflows and lws as git repositories at a tag, and JobSet's release asset ``manifests.yaml``. Here
each git source becomes a bare repository ``<root>/git/<org>/<repo>`` whose one commit holds the fixture's
tree, tagged as upstream tagged it (so a git server serves it as GitHub would), and the release asset is
built from JobSet's ``config/default`` with kustomize into ``<root>/files/<org>/<repo>/releases/download/<tag>/``:
a stand-in for the real asset (built the same way at release time; its bytes differ, so its sha256 does).
Test code only.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kfctl_testbed.gitserver import git


@dataclass(frozen=True)
class GitSource:
    fixture: str  # a tarball in ../shared/fixtures with one top directory
    repo: str  # org/name, as in https://github.com/<org>/<name>
    tag: str


GIT_SOURCES = (
    GitSource("argo-workflows-v3.7.3-manifests.tar.gz", "argoproj/argo-workflows", "v3.7.3"),
    GitSource("lws-v0.7.0-config.tar.gz", "kubernetes-sigs/lws", "v0.7.0"),
    GitSource("jobset-v0.10.1-config.tar.gz", "kubernetes-sigs/jobset", "v0.10.1"),
)
JOBSET_ASSET = "kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml"
# kubeflow/manifests releases, where GitHub serves their archives (files/<this><tag>.tar.gz).
# 26.03 is tagged without a `v` (calendar versions since the project became kubeflow/community-distribution).
RELEASES = {
    "v1.10.0": "kubeflow-manifests-v1.10.0.tar.gz",
    "v1.11.0": "kubeflow-manifests-v1.11.0.tar.gz",
    "26.03": "kubeflow-manifests-26.03.tar.gz",
}
RELEASE_ARCHIVES = "kubeflow/manifests/archive/refs/tags/"
# The image JobSet's release asset names (its release process sets it; config/ names a staging image).
JOBSET_STAGING_IMAGE = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset"
JOBSET_RELEASE_IMAGE = ("registry.k8s.io/jobset/jobset", "v0.10.1")


@dataclass(frozen=True)
class Mirror:
    root: Path
    commits: dict[str, str]  # org/name -> the commit its tag names

    @property
    def git_root(self) -> Path:
        return self.root / "git"

    @property
    def files_root(self) -> Path:
        return self.root / "files"

    @staticmethod
    def mirrors(git_base: str, file_base: str) -> list[tuple[str, str]]:
        """(prefix, location) pairs that send GitHub's URLs to the two servers, as a user behind a mirror writes:
        release archives and JobSet's release files to the file server, every git repository to the git server."""
        return [
            (f"https://github.com/{RELEASE_ARCHIVES}", f"{file_base}/{RELEASE_ARCHIVES}"),
            ("https://github.com/kubernetes-sigs/jobset/releases/", f"{file_base}/kubernetes-sigs/jobset/releases/"),
            ("https://github.com/", git_base),
        ]


def build(fixtures: Path, root: Path, *, kustomize: Sequence[str]) -> Mirror:
    """Bare repositories for GIT_SOURCES, JobSet's stand-in release asset and the RELEASES under ``root``."""
    commits = {
        source.repo: _bare_repo(fixtures / source.fixture, root / "git" / source.repo, source.tag)
        for source in GIT_SOURCES
    }
    asset = root / "files" / JOBSET_ASSET
    asset.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        config = _unpack(fixtures / "jobset-v0.10.1-config.tar.gz", Path(tmp))
        wrapper = Path(tmp) / "release"
        wrapper.mkdir()
        name, tag = JOBSET_RELEASE_IMAGE
        (wrapper / "kustomization.yaml").write_text(
            f"resources:\n- ../{config.name}/config/default\n"
            f"images:\n- name: {JOBSET_STAGING_IMAGE}\n  newName: {name}\n  newTag: {tag}\n",
            encoding="utf-8",
        )
        built = subprocess.run([*kustomize, str(wrapper)], capture_output=True, text=True, check=True, timeout=300)
        asset.write_text(built.stdout, encoding="utf-8")
    archives = root / "files" / RELEASE_ARCHIVES
    archives.mkdir(parents=True)
    for tag, fixture in RELEASES.items():
        (archives / f"{tag}.tar.gz").symlink_to(fixtures / fixture)
    return Mirror(root=root, commits=commits)


def move_tag(bare: Path, tag: str) -> str:
    """Re-point ``tag`` of the bare repository at a new commit (a file added on top), as an upstream that
    moves a release tag does; the new commit."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        git("clone", "--quiet", str(bare), str(work))
        git("checkout", "--quiet", tag, cwd=work)
        (work / "MOVED.md").write_text("This tag was moved.\n", encoding="utf-8")
        git("add", "--all", cwd=work)
        git("commit", "--quiet", "-m", f"move {tag}", cwd=work)
        git("tag", "--force", "--annotate", tag, "-m", tag, cwd=work)
        git("push", "--quiet", "--force", "origin", f"refs/tags/{tag}", cwd=work)
        return git("rev-parse", f"{tag}^{{commit}}", cwd=work).strip()


def _bare_repo(tarball: Path, bare: Path, tag: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = _unpack(tarball, Path(tmp))
        git("init", "--quiet", "--initial-branch=main", cwd=work)
        git("add", "--all", cwd=work)
        git("commit", "--quiet", "-m", tag, cwd=work)
        git("tag", "--annotate", tag, "-m", tag, cwd=work)
        bare.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", "--bare", str(work), str(bare))
        git("config", "http.receivepack", "true", cwd=bare)
        return git("rev-parse", f"{tag}^{{commit}}", cwd=work).strip()


def _unpack(tarball: Path, into: Path) -> Path:
    """The fixture's one top directory, extracted under ``into`` (upstream's own archives: trusted test data)."""
    with tarfile.open(tarball) as tf:
        tf.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise RuntimeError(f"{tarball} should hold one top directory, found {[p.name for p in tops]}")
    return tops[0]
