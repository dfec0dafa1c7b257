"""Vendor only what is used: the kustomization closure of each repo application, and generate's fallback.

A table of small trees gives the closure's exact files, remote references and problems. Through `generate`,
a repo's unused files stay out of APPDIR/vendor/, the summary counts what was vendored (text and JSON), and
an application whose closure has a problem gets its whole directory tree. On the upstream kubeflow/manifests
v1.11.0 release (skipped only when its tarball is not there; kustomize missing is a failure) the vendored
app directory, moved away from the source tree, rebuilds every rendered file byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import pytest
from test_plan_shared import UPSTREAM_APPS, write_kfdef

from kfctl.app import vendor as vendor_module
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.errors import RenderError
from kfctl.render.kustomize import find_kustomize
from kfctl.repos.closure import Closure, kustomization_closure, tree_files

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"


def closure(
    files: Iterable[str],
    remote: tuple[str, ...] = (),
    problems: tuple[str, ...] = (),
    *,
    unreadable: bool = False,
    links: dict[str, str] | None = None,
) -> Closure:
    paths = {PurePosixPath(k): PurePosixPath(v) for k, v in (links or {}).items()}
    return Closure(frozenset(PurePosixPath(f) for f in files), remote, problems, unreadable, paths)


# (id, files of the tree, start directory, expected closure)
CLOSURE_CASES: list[tuple[str, dict[str, str], str, Closure]] = [
    (
        "resources-files-dirs-and-parent-refs",
        {
            "app/kustomization.yaml": "resources: [a.yaml, ../base, ../shared/]\n",
            "app/a.yaml": CM,
            "app/unused.yaml": CM,
            "base/kustomization.yml": "resources: [dep.yaml]\nbases: [../old]\n",
            "base/dep.yaml": CM,
            "old/Kustomization": "resources: [old.yaml]\n",
            "old/old.yaml": CM,
            "shared/kustomization.yaml": "resources: [../base]\n",  # a cycle back to base: visited once
            "docs/README.md": "not used\n",
        },
        "app",
        closure(
            frozenset(
                {
                    "app/kustomization.yaml",
                    "app/a.yaml",
                    "base/kustomization.yml",
                    "base/dep.yaml",
                    "old/Kustomization",
                    "old/old.yaml",
                    "shared/kustomization.yaml",
                }
            )
        ),
    ),
    (
        "patches-of-every-kind",
        {
            "kustomization.yaml": (
                "resources: [r.yaml]\n"
                "patches:\n- path: p1.yaml\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n"
                "patchesStrategicMerge:\n- p2.yaml\n- |-\n  apiVersion: v1\n  kind: ConfigMap\n"
                "patchesJson6902:\n- path: p3.json\n  target: {kind: ConfigMap, name: x}\n"
            ),
            "r.yaml": CM,
            "p1.yaml": CM,
            "p2.yaml": CM,
            "p3.json": "[]\n",
            "p4.yaml": CM,
        },
        ".",
        closure(frozenset({"kustomization.yaml", "r.yaml", "p1.yaml", "p2.yaml", "p3.json"})),
    ),
    (
        "generators-transformers-and-config-files",
        {
            "app/kustomization.yaml": (
                "configMapGenerator:\n- name: a\n  files: [conf.ini, key=data/other.txt]\n  envs: [a.env]\n"
                "secretGenerator:\n- name: s\n  env: s.env\n  literals: [x=y]\n"
                "replacements:\n- path: repl.yaml\n"
                "configurations: [params.yaml]\n"
                "crds: [crd.json]\n"
                "openapi: {path: schema.json}\n"
                "generators: [gen.yaml]\n"
                "transformers:\n- ../tx\n- |\n  apiVersion: builtin\n  kind: LabelTransformer\n"
                "validators: [val.yaml]\n"
            ),
            "app/conf.ini": "a=b\n",
            "app/data/other.txt": "x\n",
            "app/data/unused.txt": "x\n",
            "app/a.env": "A=1\n",
            "app/s.env": "S=1\n",
            "app/repl.yaml": "[]\n",
            "app/params.yaml": "varReference: []\n",
            "app/crd.json": "{}\n",
            "app/schema.json": "{}\n",
            "app/gen.yaml": CM,
            "app/val.yaml": CM,
            "tx/kustomization.yaml": "resources: [t.yaml]\n",
            "tx/t.yaml": CM,
        },
        "app",
        closure(
            frozenset(
                {
                    "app/kustomization.yaml",
                    "app/conf.ini",
                    "app/data/other.txt",
                    "app/a.env",
                    "app/s.env",
                    "app/repl.yaml",
                    "app/params.yaml",
                    "app/crd.json",
                    "app/schema.json",
                    "app/gen.yaml",
                    "app/val.yaml",
                    "tx/kustomization.yaml",
                    "tx/t.yaml",
                }
            )
        ),
    ),
    (
        "components",
        {
            "app/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [../comp]\n",
            "app/cm.yaml": CM,
            "comp/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: add.yaml\n"
            ),
            "comp/add.yaml": CM,
            "comp/other.yaml": CM,
        },
        "app",
        closure(frozenset({"app/kustomization.yaml", "app/cm.yaml", "comp/kustomization.yaml", "comp/add.yaml"})),
    ),
    (
        "helm-chart-home-whole-and-values-files",
        {
            "kustomization.yaml": (
                "helmGlobals: {chartHome: vendor-charts}\n"
                "helmCharts:\n- name: c\n  valuesFile: values.yaml\n  additionalValuesFiles: [more.yaml]\n"
            ),
            "values.yaml": "a: 1\n",
            "more.yaml": "b: 2\n",
            "vendor-charts/c/Chart.yaml": "name: c\n",
            "vendor-charts/c/templates/cm.yaml": CM,
            "charts/not-the-home.yaml": CM,
        },
        ".",
        closure(
            frozenset(
                {
                    "kustomization.yaml",
                    "values.yaml",
                    "more.yaml",
                    "vendor-charts/c/Chart.yaml",
                    "vendor-charts/c/templates/cm.yaml",
                }
            )
        ),
    ),
    (
        "remote-urls-left-alone",
        {
            "kustomization.yaml": (
                "resources:\n- https://github.com/org/repo//base?ref=v1\n- github.com/org/repo/path?ref=v2\n"
                "- git@github.com:org/repo.git\n- cm.yaml\n"
            ),
            "cm.yaml": CM,
        },
        ".",
        closure(
            frozenset({"kustomization.yaml", "cm.yaml"}),
            remote=(
                "https://github.com/org/repo//base?ref=v1",
                "github.com/org/repo/path?ref=v2",
                "git@github.com:org/repo.git",
            ),
        ),
    ),
    (
        "missing-file-is-a-problem",
        {
            "app/kustomization.yaml": "resources: [cm.yaml, gone.yaml]\npatches:\n- path: nope.yaml\n",
            "app/cm.yaml": CM,
        },
        "app",
        closure(
            frozenset({"app/kustomization.yaml", "app/cm.yaml"}),
            problems=(
                'app/kustomization.yaml resources: "gone.yaml" does not exist',
                'app/kustomization.yaml patches: "nope.yaml" does not exist',
            ),
        ),
    ),
    (
        "unparsable-kustomization-is-a-problem",
        {
            "app/kustomization.yaml": "resources: [../base]\n",
            "base/kustomization.yaml": "resources: [a.yaml\n",
        },
        "app",
        closure(
            frozenset({"app/kustomization.yaml", "base/kustomization.yaml"}),
            problems=("base/kustomization.yaml:2:1: invalid YAML: did not find expected ',' or ']'",),
            unreadable=True,
        ),
    ),
    (
        "directory-without-kustomization-and-path-outside-the-repo",
        {
            "kustomization.yaml": "resources: [plain, ../../etc/passwd]\n",
            "plain/cm.yaml": CM,
        },
        ".",
        closure(
            frozenset({"kustomization.yaml"}),
            problems=(
                "kustomization.yaml resources: plain/ holds no kustomization",
                'kustomization.yaml resources: "../../etc/passwd" is outside the repo',
            ),
        ),
    ),
    (
        "application-path-is-a-file",
        {"all.yaml": CM, "other.yaml": CM},
        "all.yaml",
        closure(frozenset({"all.yaml"})),
    ),
]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("files", "start", "expected"), [c[1:] for c in CLOSURE_CASES], ids=[c[0] for c in CLOSURE_CASES]
)
def test_closure(tmp_path: Path, files: dict[str, str], start: str, expected: Closure) -> None:
    root = tmp_path / "repo"
    write_tree(root, files)
    got = kustomization_closure(root / start, root=root)
    assert got == expected


SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not for the cluster\n"
# Outside the repo (tmp/repo): tmp/outside.txt and tmp/secrets/id_rsa, both holding SECRET.
OUTSIDE = {"outside.txt": SECRET, "secrets/id_rsa": SECRET}
GENERATOR = "configMapGenerator:\n- name: cm\n  files: [k=link.txt]\n"

# (id, files of the repo, its symlinks (link -> target as written), start, expected; {tmp} is realpath(tmp))
SYMLINK_CASES: list[tuple[str, dict[str, str], dict[str, str], str, Closure]] = [
    (
        "file-link-outside-is-refused",
        {"app/kustomization.yaml": GENERATOR},
        {"app/link.txt": "../../outside.txt"},
        "app",
        closure(
            {"app/kustomization.yaml"},
            problems=(
                'app/kustomization.yaml configMapGenerator files: "link.txt": symlink app/link.txt ->'
                " ../../outside.txt points outside the repo, to {tmp}/outside.txt",
            ),
        ),
    ),
    (
        "absolute-file-link-outside-is-refused",
        {"app/kustomization.yaml": GENERATOR},
        {"app/link.txt": "{tmp}/secrets/id_rsa"},
        "app",
        closure(
            {"app/kustomization.yaml"},
            problems=(
                'app/kustomization.yaml configMapGenerator files: "link.txt": symlink app/link.txt ->'
                " {tmp}/secrets/id_rsa points outside the repo, to {tmp}/secrets/id_rsa",
            ),
        ),
    ),
    (
        "file-link-inside-is-kept-as-a-link-with-its-target",
        {"app/kustomization.yaml": GENERATOR, "app/conf/real.txt": "v\n"},
        {"app/link.txt": "conf/real.txt"},
        "app",
        closure({"app/kustomization.yaml", "app/conf/real.txt"}, links={"app/link.txt": "app/conf/real.txt"}),
    ),
    (
        "directory-link-inside-resolves-parent-refs-from-its-target-like-kustomize",
        {
            "app/kustomization.yaml": "resources: [base]\n",
            "shared/base/kustomization.yaml": "resources: [../common]\n",
            "shared/common/kustomization.yaml": "resources: [cm.yaml]\n",
            "shared/common/cm.yaml": CM,
        },
        {"app/base": "../shared/base"},
        "app",
        closure(
            {
                "app/kustomization.yaml",
                "shared/base/kustomization.yaml",
                "shared/common/kustomization.yaml",
                "shared/common/cm.yaml",
            },
            links={"app/base": "shared/base"},
        ),
    ),
    (
        "directory-link-outside-is-not-descended",
        {"app/kustomization.yaml": "resources: [root, secrets/id_rsa]\n"},
        {"app/root": "/", "app/secrets": "../../secrets"},
        "app",
        closure(
            {"app/kustomization.yaml"},
            problems=(
                'app/kustomization.yaml resources: "root": symlink app/root -> / points outside the repo, to /',
                'app/kustomization.yaml resources: "secrets/id_rsa": symlink app/secrets -> ../../secrets points'
                " outside the repo, to {tmp}/secrets",
            ),
        ),
    ),
    (
        "kustomization-file-link-outside-is-refused",
        {},
        {"app/kustomization.yaml": "../../outside.txt"},
        "app",
        closure(
            set(),
            problems=(
                'application path: "kustomization.yaml": symlink app/kustomization.yaml -> ../../outside.txt'
                " points outside the repo, to {tmp}/outside.txt",
            ),
        ),
    ),
    (
        "link-loops-terminate",
        {"app/kustomization.yaml": "resources: [self, loop.yaml]\n"},
        {"app/self": ".", "app/loop.yaml": "loop.yaml"},
        "app",
        closure(
            {"app/kustomization.yaml"},
            problems=(
                'app/kustomization.yaml resources: "loop.yaml": symlink app/loop.yaml -> loop.yaml leads nowhere'
                " (dangling or a loop)",
            ),
            links={"app/self": "app"},
        ),
    ),
]


def write_links(root: Path, links: dict[str, str], tmp: Path) -> None:
    for name, target in links.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target.format(tmp=tmp))


def formatted(expected: Closure, tmp: Path) -> Closure:
    problems = tuple(p.format(tmp=tmp) for p in expected.problems)
    return Closure(expected.files, expected.remote, problems, expected.unreadable, expected.links)


@pytest.mark.parametrize(
    ("files", "links", "start", "expected"), [c[1:] for c in SYMLINK_CASES], ids=[c[0] for c in SYMLINK_CASES]
)
def test_closure_symlinks(
    tmp_path: Path, files: dict[str, str], links: dict[str, str], start: str, expected: Closure
) -> None:
    tmp = tmp_path.resolve()
    write_tree(tmp, OUTSIDE)
    write_tree(tmp / "repo", files)
    write_links(tmp / "repo", links, tmp)
    assert kustomization_closure(tmp / "repo" / start, root=tmp / "repo") == formatted(expected, tmp)


def test_tree_walk_keeps_inside_links_and_never_leaves_the_repo(tmp_path: Path) -> None:
    tmp = tmp_path.resolve()
    write_tree(tmp, OUTSIDE)
    write_tree(tmp / "repo", {"app/a.yaml": CM, "shared/s.yaml": CM, "app/.git/config": "x\n"})
    links = {
        "app/root": "/",
        "app/secrets": "../../secrets",
        "app/key": "{tmp}/secrets/id_rsa",
        "app/up": "..",  # a loop back to the repo root: walked once
        "app/s.yaml": "../shared/s.yaml",
    }
    write_links(tmp / "repo", links, tmp)
    got = tree_files(tmp / "repo" / "app", root=tmp / "repo")
    assert got == formatted(
        closure(
            {"app/a.yaml", "shared/s.yaml"},
            problems=(
                "app/: symlink app/key -> {tmp}/secrets/id_rsa points outside the repo, to {tmp}/secrets/id_rsa",
                "app/: symlink app/root -> / points outside the repo, to /",
                "app/: symlink app/secrets -> ../../secrets points outside the repo, to {tmp}/secrets",
            ),
            links={"app/s.yaml": "shared/s.yaml", "app/up": "."},
        ),
        tmp,
    )


NAMESPACED_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {a: '1'}\n"
REPO = {
    "apps/web/kustomization.yaml": "resources: [cm.yaml, ../../base]\npatches:\n- path: patch.yaml\n",
    "apps/web/cm.yaml": NAMESPACED_CM,
    "apps/web/patch.yaml": NAMESPACED_CM.replace("a: '1'", "b: '2'"),
    "apps/web/NOTES.md": "not used by the kustomization\n",
    "base/kustomization.yaml": "resources: [dep.yaml]\n",
    "base/dep.yaml": NAMESPACED_CM.replace("name: web", "name: dep"),
    "apps/other/kustomization.yaml": "resources: [../../docs]\n",
    "docs/big.md": "x" * 100_000,
}
USED = [
    "apps/web/kustomization.yaml",
    "apps/web/cm.yaml",
    "apps/web/patch.yaml",
    "base/kustomization.yaml",
    "base/dep.yaml",
]


def vendored(app: Path) -> dict[str, int]:
    root = app / "vendor" / "repos" / "upstream"
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def test_generate_vendors_only_what_the_kustomizations_use_and_counts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(tmp_path / "repo", REPO)
    app = tmp_path / "demo"
    write_kfdef(app, tmp_path / "repo", [("web", "apps/web", [])])
    assert main(["generate", str(app), "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    files = vendored(app)
    assert sorted(files) == sorted(USED)
    size = sum(files.values())
    assert result["vendored"] == {"files": 5, "bytes": size, "fallbacks": [], "translated": []}
    assert main(["generate", str(app)]) == 0
    assert f"\nVendored 5 file(s), {size} B into {app / 'vendor'}\n" in capsys.readouterr().out


def test_a_kustomization_it_cannot_read_vendors_the_whole_repo(
    tmp_path: Path, real_catalog: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    # Over yamlio's 4 MiB limit (a long comment), yet valid for kustomize. Its "../../base" is unknown to
    # kfctl, so only the whole repo is sure to build; the application still renders.
    big = REPO["apps/web/kustomization.yaml"] + "# " + "x" * (4 * 1024 * 1024) + "\n"
    write_tree(tmp_path / "repo", {**REPO, "apps/web/kustomization.yaml": big})
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app, tmp_path / "repo", [("web", "apps/web", [])]), real_catalog)
    result = generate(kfdef, real_catalog)
    assert sorted(vendored(app)) == sorted(REPO)
    assert result.vendor_fallbacks == (
        "application web: vendored the whole repo vendor/repos/upstream/ because"
        " apps/web/kustomization.yaml:4:4194244: the file is larger than 4 MiB, the most kfctl reads of a YAML file"
        " (the limit falls here)",
    )
    assert main(["generate", str(app), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["vendored"]["fallbacks"] == list(result.vendor_fallbacks)


def test_a_path_it_cannot_find_vendors_the_whole_application_directory(
    tmp_path: Path, real_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if kfctl misread a reference kustomize understands: the patch is missing from the closure.
    def misread(start: Path, *, root: Path) -> Closure:
        real = kustomization_closure(start, root=root)
        return Closure(
            real.files - {PurePosixPath("apps/web/patch.yaml")},
            problems=('apps/web/kustomization.yaml patches: "patch.yaml" does not exist',),
        )

    monkeypatch.setattr(vendor_module, "kustomization_closure", misread)
    write_tree(tmp_path / "repo", REPO)
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app, tmp_path / "repo", [("web", "apps/web", [])]), real_catalog)
    result = generate(kfdef, real_catalog)
    assert sorted(vendored(app)) == sorted([*USED, "apps/web/NOTES.md"])
    assert result.vendor_fallbacks == (
        "application web: vendored its whole directory vendor/repos/upstream/apps/web/ because"
        ' apps/web/kustomization.yaml patches: "patch.yaml" does not exist',
    )
    assert (app / "rendered" / "web.yaml").read_text().count('b: "2"') == 1  # the patch applied


def test_upstream_v1_11_vendored_app_dir_rebuilds_every_rendered_file(
    tmp_path: Path, real_catalog: Catalog, upstream_v1_11: Path
) -> None:
    with tarfile.open(upstream_v1_11) as tar:
        tar.extractall(tmp_path / "src", filter="data")
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app, tmp_path / "src" / "manifests-1.11.0", UPSTREAM_APPS), real_catalog)
    result = generate(kfdef, real_catalog)
    assert (result.vendored_files, result.vendored_bytes, result.vendor_fallbacks) == (71, 6_579_629, ())
    moved = tmp_path / "elsewhere"
    shutil.move(app, moved)
    shutil.rmtree(tmp_path / "src")  # the vendored copy alone must build
    k = find_kustomize()  # no kustomize is a failure here, not a skip
    for name, _, _ in UPSTREAM_APPS:
        built = subprocess.run([*k.argv, str(moved / "kustomize" / name)], capture_output=True, text=True, check=True)
        assert built.stdout == (moved / "rendered" / f"{name}.yaml").read_text(encoding="utf-8"), name


def files_holding(root: Path, text: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and text in p.read_text(errors="replace")]


def test_generate_keeps_inside_links_as_links_and_the_vendored_dir_rebuilds(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_tree(
        repo,
        {
            "apps/web/kustomization.yaml": "resources: [base]\n" + GENERATOR,
            "apps/web/conf/real.txt": "value\n",
            "shared/base/kustomization.yaml": "resources: [../common]\n",
            "shared/common/kustomization.yaml": "resources: [cm.yaml]\n",
            "shared/common/cm.yaml": NAMESPACED_CM,
        },
    )
    write_links(repo, {"apps/web/link.txt": "conf/real.txt", "apps/web/base": "../../shared/base"}, tmp_path)
    app = tmp_path / "demo"
    write_kfdef(app, repo, [("web", "apps/web", [])])
    assert main(["generate", str(app)]) == 0
    vendor = app / "vendor" / "repos" / "upstream"
    assert {p: os.readlink(vendor / p) for p in ("apps/web/link.txt", "apps/web/base")} == {
        "apps/web/link.txt": "conf/real.txt",
        "apps/web/base": "../../shared/base",
    }
    assert sorted(vendored(app)) == [  # link.txt is the link, read through
        "apps/web/conf/real.txt",
        "apps/web/kustomization.yaml",
        "apps/web/link.txt",
        "shared/base/kustomization.yaml",
        "shared/common/cm.yaml",
        "shared/common/kustomization.yaml",
    ]
    rendered = (app / "rendered" / "web.yaml").read_text(encoding="utf-8")
    assert "  k: |\n    value\n" in rendered
    moved = tmp_path / "elsewhere"
    shutil.move(app, moved)
    shutil.rmtree(repo)  # the vendored copy alone must build, links and all
    built = subprocess.run([*find_kustomize().argv, str(moved / "kustomize" / "web")], capture_output=True, text=True)
    assert (built.returncode, built.stdout) == (0, rendered)


def test_generate_never_vendors_a_file_a_link_takes_outside_the_repo(tmp_path: Path, real_catalog: Catalog) -> None:
    write_tree(tmp_path, OUTSIDE)
    repo = tmp_path / "repo"
    write_tree(repo, {"apps/web/kustomization.yaml": GENERATOR})
    write_links(repo, {"apps/web/link.txt": "../../../outside.txt"}, tmp_path)
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app, repo, [("web", "apps/web", [])]), real_catalog)
    with pytest.raises(RenderError) as err:  # vendored without the link, so kustomize cannot find link.txt
        generate(kfdef, real_catalog)
    assert "link.txt: no such file or directory" in err.value.details[0]
    link = f"symlink apps/web/link.txt -> ../../../outside.txt points outside the repo, to {tmp_path.resolve()}"
    assert err.value.details[1:] == [
        "application web: vendored its whole directory vendor/repos/upstream/apps/web/ because"
        f' apps/web/kustomization.yaml configMapGenerator files: "link.txt": {link}/outside.txt;'
        f" left out: apps/web/: {link}/outside.txt"
    ]
    assert files_holding(app, "PRIVATE KEY") == []


def test_the_fallback_walk_copies_nothing_from_outside_the_repo(
    tmp_path: Path, real_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def misread(start: Path, *, root: Path) -> Closure:
        real = kustomization_closure(start, root=root)
        return Closure(real.files, problems=('apps/web/kustomization.yaml patches: "patch.yaml" does not exist',))

    monkeypatch.setattr(vendor_module, "kustomization_closure", misread)
    write_tree(tmp_path, OUTSIDE)
    write_tree(tmp_path / "repo", REPO)
    write_links(tmp_path / "repo", {"apps/web/secrets": "../../../secrets", "apps/web/loop": "."}, tmp_path)
    app = tmp_path / "demo"
    kfdef = load_kfdef(write_kfdef(app, tmp_path / "repo", [("web", "apps/web", [])]), real_catalog)
    result = generate(kfdef, real_catalog)
    assert sorted(vendored(app)) == sorted([*USED, "apps/web/NOTES.md"])
    assert os.readlink(app / "vendor/repos/upstream/apps/web/loop") == "."
    assert not (app / "vendor/repos/upstream/apps/web/secrets").exists()
    assert files_holding(app, "PRIVATE KEY") == []
    assert result.vendor_fallbacks == (
        "application web: vendored its whole directory vendor/repos/upstream/apps/web/ because"
        ' apps/web/kustomization.yaml patches: "patch.yaml" does not exist; left out: apps/web/: symlink'
        f" apps/web/secrets -> ../../../secrets points outside the repo, to {tmp_path.resolve()}/secrets",
    )
