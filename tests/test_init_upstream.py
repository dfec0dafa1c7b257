"""`kfctl init --upstream RELEASE`: upstream Kubeflow's full platform, scaffolded from the release's own example.

The releases are upstream's (kubeflow/manifests v1.10.0 and v1.11.0 from ../shared/fixtures), served where
GitHub serves their archives by a file server on 127.0.0.1 and reached through --mirror, with the remote bases
v1.11.0 fetches on a git server beside it (kfctl_testbed.upstream_mirror). The oracle for the applications is
upstream's example/kustomization.yaml read as YAML: one application per resource line, in its order.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kfctl_testbed import fileserver, gitserver, upstream_mirror
from upstream import shared_fixture

from kfctl.app.generate import generate
from kfctl.app.init_upstream import application_names, read_example
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.config.loader import load_kfdef
from kfctl.render.kustomize import find_kustomize

RELEASES = {
    "v1.10.0": ("manifests-1.10.0", 28, ()),
    "v1.11.0": ("manifests-1.11.0", 29, ("../common/security/PSS/dynamic/baseline",)),
    "26.03": ("manifests-26.03", 27, ()),
}


def example_text(release: str) -> str:
    top = RELEASES[release][0]
    with tarfile.open(shared_fixture(upstream_mirror.RELEASES[release])) as tf:
        member = tf.extractfile(f"{top}/example/kustomization.yaml")
        assert member is not None
        return member.read().decode("utf-8")


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_one_application_per_resource_line_of_upstreams_example(release: str) -> None:
    text = example_text(release)
    oracle: dict[str, Any] = yaml.safe_load(text)
    example = read_example(text)
    assert [f"../{line.path}" for line in example.lines] == [r.split("#")[0].strip() for r in oracle["resources"]]
    assert len(example.lines) == RELEASES[release][1]
    assert example.components == RELEASES[release][2]
    names = application_names([line.path for line in example.lines])
    assert len(set(names)) == len(names)


NAMES = [
    ("common/cert-manager/base", "cert-manager"),
    ("common/istio/istio-crds/base", "istio-crds"),
    ("common/knative/knative-serving/overlays/gateways", "knative-serving-gateways"),
    (
        "applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user",
        "pipeline-cert-manager-platform-agnostic-multi-user",
    ),
    ("applications/kserve/kserve", "kserve"),
    ("applications/trainer/overlays", "trainer"),
]


def test_application_names_say_what_each_line_is() -> None:
    assert application_names([p for p, _ in NAMES]) == [n for _, n in NAMES]
    assert application_names(["a/base", "a/overlays/base"]) == ["a", "a-2"]


def test_the_example_comments_stay_beside_their_lines() -> None:
    lines = read_example(example_text("v1.11.0")).lines
    by_path = {line.path: line for line in lines}
    assert by_path["applications/katib/upstream/installs/katib-with-kubeflow"].comments[-1] == "Katib"
    assert by_path["common/oauth2-proxy/overlays/m2m-dex-only"].note == "for all clusters"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> upstream_mirror.Mirror:
    fixtures = shared_fixture("README.md").parent
    return upstream_mirror.build(fixtures, tmp_path_factory.mktemp("mirror"), kustomize=find_kustomize().argv)


@pytest.fixture
def servers(mirror: upstream_mirror.Mirror) -> Iterator[list[tuple[str, str]]]:
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        yield upstream_mirror.Mirror.mirrors(f"http://127.0.0.1:{git_server.port}/", files.base)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_upstream_then_generate_offline_and_plan_on_one_screen(
    tmp_path: Path,
    mirror: upstream_mirror.Mirror,
    real_catalog: Catalog,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # nothing listens: GitHub is out of reach
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    app = tmp_path / "kubeflow"
    with gitserver.serve(mirror.git_root) as git_server, fileserver.serve(mirror.files_root) as files:
        pairs = upstream_mirror.Mirror.mirrors(f"http://127.0.0.1:{git_server.port}/", files.base)
        flags = [arg for prefix, location in pairs for arg in ("--mirror", f"{prefix}={location}")]
        code, stdout, stderr = run(capsys, "init", str(app), "--upstream", "v1.11.0", *flags, "-o", "json")
        assert code == 0, stderr
        out = yaml.safe_load(stdout)
        kfdef = load_kfdef(app / "kfdef.yaml", real_catalog)
        generated = generate(kfdef, real_catalog)
    oracle = yaml.safe_load(example_text("v1.11.0"))["resources"]
    assert out["release"] == "v1.11.0"
    assert out["uri"] == "https://github.com/kubeflow/manifests/archive/refs/tags/v1.11.0.tar.gz"
    assert out["notApplied"] == ["../common/security/PSS/dynamic/baseline"]
    assert [f"../{a.path}" for a in kfdef.applications] == [r.split("#")[0].strip() for r in oracle]
    assert all(a.depends_on == () for a in kfdef.applications)
    assert [m.prefix for m in kfdef.mirrors] == [p for p, _ in pairs]
    assert kfdef.repos[0].uri == out["uri"]
    assert len(generated.applications) == 29 and generated.remote_bases == 4
    lock = yaml.safe_load((app / "kfdef.lock").read_text(encoding="utf-8"))
    assert lock["repos"][0]["uri"] == out["uri"]

    # The mirror is gone: the plan (which renders again) and --offline need neither it nor the network.
    code, plan, stderr = run(capsys, "plan", str(app))
    assert code == 0, stderr
    assert plan.startswith("Plan: 654 objects in 29 application(s)")  # 653 rendered, and auth/kfctl-login (Dex)
    # Upstream's shared login: Dex's password hash, its OIDC client secret and oauth2-proxy's, generated instead.
    assert (
        "3 of them Secret(s) holding upstream's shared credentials, which kfctl generates per install instead, plus 1 "
        "Secret(s) kfctl generates in the cluster at apply" in plan.splitlines()[1]
    ), plan.splitlines()[1]
    assert len(plan.splitlines()) <= 50  # one screen
    assert generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog, offline=True).changed == ()


def test_init_upstream_from_an_archive_path_names_the_release_by_its_top_directory(
    tmp_path: Path, real_catalog: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = shared_fixture("kubeflow-manifests-v1.10.0.tar.gz")
    code, stdout, stderr = run(capsys, "init", str(tmp_path / "kf"), "--upstream", str(archive))
    assert code == 0, stderr
    assert stdout.splitlines()[0] == (
        f"Wrote {tmp_path / 'kf' / 'kfdef.yaml'} (upstream Kubeflow manifests-1.10.0, 28 applications from "
        f"{archive.resolve()})"
    )
    assert "# Upstream Kubeflow manifests-1.10.0, the full platform" in (tmp_path / "kf" / "kfdef.yaml").read_text()
    assert len(load_kfdef(tmp_path / "kf" / "kfdef.yaml", real_catalog).applications) == 28


MISTAKES = [
    (
        "not-a-release",
        ["--upstream", "{fixtures}/lws-v0.7.0-config.tar.gz"],
        3,
        "Error (config error): --upstream {fixtures}/lws-v0.7.0-config.tar.gz: {resolved}/lws-v0.7.0-config.tar.gz "
        "holds no example/kustomization.yaml, so it is not a kubeflow/manifests release\n"
        "Hint: name a release tag (e.g. v1.11.0, 26.03) or the archive of one\n",
    ),
    (
        "components-with-upstream",
        ["--upstream", "v1.11.0", "--components", "katib"],
        2,
        "Error (usage error): --components picks catalog components; --upstream takes the release's own lines\n",
    ),
    (
        "mirror-without-upstream",
        ["--platform", "kind", "--mirror", "https://github.com/=/srv"],
        2,
        "Error (usage error): --mirror goes with --upstream (for the catalog, set spec.mirrors in the KfDef)\n",
    ),
    (
        "no-platform",
        [],
        2,
        "Error (usage error): Missing option '--platform' / '-p'.\n"
        "Hint: name the cluster kind (kfctl init demo --platform kind), or scaffold upstream Kubeflow (--upstream)\n",
    ),
]


@pytest.mark.parametrize(("args", "code", "message"), [c[1:] for c in MISTAKES], ids=[c[0] for c in MISTAKES])
def test_init_upstream_mistakes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    fixtures = shared_fixture("README.md").parent
    # The flag as given, then the file it names: through a symlinked ../shared (a worktree, a mounted checkout)
    # the two differ.
    got = run(capsys, "init", str(tmp_path / "kf"), *[a.format(fixtures=fixtures) for a in args])
    assert (got[0], got[2]) == (code, message.format(fixtures=fixtures, resolved=fixtures.resolve()))
    assert not (tmp_path / "kf" / "kfdef.yaml").exists()


def test_a_release_the_mirror_lacks_is_named_in_both_spellings_with_where_each_was_tried(
    tmp_path: Path, servers: list[tuple[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    prefix, location = servers[0]
    code, _, stderr = run(
        capsys, "init", str(tmp_path / "kf"), "--upstream", "v9.9.9", "--mirror", f"{prefix}={location}"
    )
    assert code == 10
    archive = "https://github.com/kubeflow/manifests/archive/refs/tags/"
    assert stderr.splitlines() == [
        "Error (fetch error): --upstream v9.9.9: neither tag v9.9.9 nor 9.9.9 was found",
        *(
            f'  repo "manifests" ({archive}{tag}.tar.gz), from {location}{tag}.tar.gz (mirror {prefix} = '
            f"{location}): download failed: HTTP 404 File not found"
            for tag in ("v9.9.9", "9.9.9")
        ),
        "Hint: check the tag (kfctl is tested with v1.10.0, v1.11.0, 26.03); without network, map the release to a "
        "mirror (--mirror https://github.com/=LOCATION) or give a local archive of it "
        "(--upstream ./manifests-26.03.tar.gz)",
    ]
    assert not (tmp_path / "kf").exists()  # nothing written, not even the cache's directories


@pytest.mark.parametrize(("given", "found"), [("26.03", "26.03"), ("v26.03", "26.03"), ("1.11.0", "v1.11.0")])
def test_a_tag_is_tried_as_given_then_in_its_other_spelling(
    tmp_path: Path, servers: list[tuple[str, str]], capsys: pytest.CaptureFixture[str], given: str, found: str
) -> None:
    prefix, location = servers[0]
    code, stdout, stderr = run(
        capsys, "init", str(tmp_path / "kf"), "--upstream", given, "--mirror", f"{prefix}={location}", "-o", "json"
    )
    assert code == 0, stderr
    out = yaml.safe_load(stdout)
    assert (out["release"], out["uri"]) == (
        found,
        f"https://github.com/kubeflow/manifests/archive/refs/tags/{found}.tar.gz",
    )
