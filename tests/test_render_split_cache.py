"""Rendering at scale and again: a large plain application built in chunks gives exactly what one kustomize
build gives (kfctl.render.split), and an application whose inputs did not change is taken from the render
cache, which a changed input of any kind misses and `--check` never uses (kfctl.render.cache). Real kustomize.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.render import kustomize, split
from kfctl.render.kustomize import find_kustomize

# Every ordering rule of kustomize's legacy sort, and ids that differ only where the rule looks.
TRICKY: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "z", "namespace": "a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y", "namespace": "b"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y", "namespace": "0"}},
    {"apiVersion": "b.example/v1", "kind": "Widget", "metadata": {"name": "w1"}},
    {"apiVersion": "a.example/v2", "kind": "Widget", "metadata": {"name": "w1"}},
    {"apiVersion": "a.example/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}},
    {"apiVersion": "example.com/v1", "kind": "Namespace", "metadata": {"name": "c"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
    {"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "d2", "namespace": "a"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"}},
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "m"},
    },
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s.x", "namespace": "a"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "a.x"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q", "namespace": "a"}, "data": {"k": "ends---"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "namespace": "a"}, "data": {"k": "1"}},
]

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: big}
spec:
  platform: generic
  repos: [{name: local, uri: ./src}]
  applications:
    - name: bundle
      kustomizeConfig: {repoRef: {name: local, path: bundle}}
"""


def bundle_app(root: Path, objects: list[dict[str, Any]], *, files: int = 1) -> Path:
    src = root / "src" / "bundle"
    src.mkdir(parents=True)
    names = [f"part{i}.yaml" for i in range(files)]
    for i, name in enumerate(names):
        # The first file written the way people write YAML by hand: a leading "---" and a comment.
        text = yaml.safe_dump_all(objects[i::files], sort_keys=False)
        (src / name).write_text(("---\n# objects\n" if i == 0 else "") + text)
    (src / "kustomization.yaml").write_text(f"resources: [{', '.join(names)}]\n")
    (root / "kfdef.yaml").write_text(KFDEF)
    return root


def whole_build(app: Path) -> str:
    k = find_kustomize()
    argv = [*k.argv, *kustomize.UNRESTRICTED, str(app / "kustomize" / "bundle")]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("files", [1, 3], ids=["one-file", "three-files"])
def test_a_large_plain_application_built_in_chunks_is_byte_for_byte_one_build(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    monkeypatch.setattr(split, "SPLIT_ABOVE", 5)
    monkeypatch.setattr(split, "CHUNK", 4)
    builds: list[Path] = []
    real_build = kustomize.build
    monkeypatch.setattr(kustomize, "build", lambda k, d, **kw: builds.append(d) or real_build(k, d, **kw))
    app = bundle_app(tmp_path, TRICKY, files=files)
    result = generate(load_kfdef(app / "kfdef.yaml", catalog), catalog)
    assert result.objects == len(TRICKY)
    assert len(builds) == 5  # 19 documents in chunks of 4, not one build of the wrapper
    assert (app / "rendered" / "bundle.yaml").read_text() == whole_build(app)


# (id, what makes the application not plain, so it is built whole)
WHOLE_CASES = [
    ("a-transformer", "resources: [part0.yaml]\nlabels: [{pairs: {team: ml}}]\n"),
    ("a-directory", "resources: [sub]\n"),
    ("few-documents", None),
]


@pytest.mark.parametrize(("case", "kustomization"), WHOLE_CASES, ids=[c[0] for c in WHOLE_CASES])
def test_an_application_that_is_not_plain_is_built_whole(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, case: str, kustomization: str | None
) -> None:
    monkeypatch.setattr(split, "SPLIT_ABOVE", 5 if kustomization else 100)
    monkeypatch.setattr(split, "CHUNK", 4)
    app = bundle_app(tmp_path, TRICKY)
    if kustomization:
        sub = app / "src" / "bundle" / "sub"
        sub.mkdir()
        (sub / "kustomization.yaml").write_text("resources: [../part0.yaml]\n")
        (app / "src" / "bundle" / "kustomization.yaml").write_text(kustomization)
    kfdef = load_kfdef(app / "kfdef.yaml", catalog)
    assert split.plain_pieces(app / "kustomize" / "bundle", {"kustomization.yaml": ""}) is None
    generate(kfdef, catalog)
    wrapper = app / "kustomize" / "bundle"
    files = {p.name: p.read_text() for p in wrapper.iterdir()}
    assert split.plain_pieces(wrapper, files) is None
    assert (app / "rendered" / "bundle.yaml").read_text() == whole_build(app)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The applications kustomize builds, in order."""
    built: list[str] = []
    real_build = kustomize.build
    monkeypatch.setattr(
        kustomize, "build", lambda k, d, *, app, **kw: built.append(app) or real_build(k, d, app=app, **kw)
    )
    return built


KIND = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {{name: demo}}
spec:
  platform: kind
  applications:
    - name: common
    - name: training-operator
      kustomizeConfig:
        parameters: [{{name: gangSchedulerName, value: {gang}}}]
"""


def test_a_regenerate_builds_only_what_changed_and_check_builds_everything(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KIND.format(gang="volcano"))
    built = counting(monkeypatch)
    generate(load_kfdef(app / "kfdef.yaml", catalog), catalog)
    assert sorted(built) == ["common", "training-operator"]
    assert sorted(p.name for p in (app / ".cache" / "render").iterdir()) == ["common.json", "training-operator.json"]

    built.clear()
    first = (app / "rendered" / "training-operator.yaml").read_text()
    assert generate(load_kfdef(app / "kfdef.yaml", catalog), catalog).changed == ()
    assert built == []  # nothing changed: nothing built

    (app / "kfdef.yaml").write_text(KIND.format(gang="scheduler-plugins"))
    result = generate(load_kfdef(app / "kfdef.yaml", catalog), catalog)
    assert built == ["training-operator"]  # one parameter: one application
    assert "rendered/training-operator.yaml" in result.changed
    assert (app / "rendered" / "training-operator.yaml").read_text() != first

    built.clear()
    generate(load_kfdef(app / "kfdef.yaml", catalog), catalog, check=True)
    assert sorted(built) == ["common", "training-operator"]  # --check renders afresh


# (id, what changes between two generates besides nothing: each must miss the cache)
MISS_CASES = ["vendored-file", "kustomize-version", "corrupt-entry"]


@pytest.mark.parametrize("case", MISS_CASES)
def test_any_changed_input_misses_the_cache(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KIND.format(gang="volcano"))
    generate(load_kfdef(app / "kfdef.yaml", catalog), catalog)
    built = counting(monkeypatch)
    find = kustomize.find_kustomize
    if case == "vendored-file":
        source = catalog.components["common"].path
        extra = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra", "namespace": "kubeflow"}}
        patched = tmp_path / "catalog-common"
        shutil.copytree(source, patched)
        (patched / "extra.yaml").write_text(yaml.safe_dump(extra))
        k = yaml.safe_load((patched / "kustomization.yaml").read_text())
        k["resources"] = [*k["resources"], "extra.yaml"]
        (patched / "kustomization.yaml").write_text(yaml.safe_dump(k))
        components = dict(catalog.components)
        components["common"] = dataclasses.replace(components["common"], path=patched)
        catalog = dataclasses.replace(catalog, components=components)
        expected = ["common"]
    elif case == "kustomize-version":
        find = lambda: kustomize.Kustomize(kustomize.find_kustomize().argv, "v5.99.0")  # noqa: E731
        expected = ["common", "training-operator"]
    else:
        (app / ".cache" / "render" / "common.json").write_text("{not json")
        expected = ["common"]
    generate(load_kfdef(app / "kfdef.yaml", catalog), catalog, find=find)
    assert sorted(built) == expected
    if case == "vendored-file":
        assert "extra" in (app / "rendered" / "common.yaml").read_text()
    assert generate(load_kfdef(app / "kfdef.yaml", catalog), catalog, find=find, check=True).changed == ()
