"""Vendor only what is used: the kustomization closure of each repo application, and generate's fallback.

A table of small trees gives the closure's exact files, remote references and problems. Through `generate`,
a repo's unused files stay out of APPDIR/vendor/, the summary counts what was vendored (text and JSON), and
an application whose closure has a problem gets its whole directory tree. On the upstream kubeflow/manifests
v1.11.0 release (skipped only when its tarball is not there; kustomize missing is a failure) the vendored
app directory, moved away from the source tree, rebuilds every rendered file byte for byte.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import pytest
from test_plan_shared import UPSTREAM_APPS, UPSTREAM_V1_11, write_kfdef

from kfctl.app import generate as generate_module
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.render.kustomize import find_kustomize
from kfctl.repos.closure import Closure, kustomization_closure

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"


def closure(
    files: Iterable[str], remote: tuple[str, ...] = (), problems: tuple[str, ...] = (), *, unreadable: bool = False
) -> Closure:
    return Closure(frozenset(PurePosixPath(f) for f in files), remote, problems, unreadable)


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
    assert result["vendored"] == {"files": 5, "bytes": size, "fallbacks": []}
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

    monkeypatch.setattr(generate_module, "kustomization_closure", misread)
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


@pytest.mark.skipif(not UPSTREAM_V1_11.is_file(), reason=f"{UPSTREAM_V1_11} is not there")
def test_upstream_v1_11_vendored_app_dir_rebuilds_every_rendered_file(tmp_path: Path, real_catalog: Catalog) -> None:
    with tarfile.open(UPSTREAM_V1_11) as tar:
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
