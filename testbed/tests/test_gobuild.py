"""kfctl_testbed.gobuild (`e2e/build-binaries`): which binaries each flag builds, where they go, the pin checks and the
command line's contract. Hermetic: no real go runs; where a run is needed, a fake `go` on PATH records its calls.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from kfctl_testbed import localcluster, runtime
from kfctl_testbed.gobuild import cachekeys, cli, pins, webapps
from kfctl_testbed.gobuild.errors import PinError
from kfctl_testbed.gobuild.recipes import Group, Selection, builds, in_groups, operator_binaries, recipe, releases
from kfctl_testbed.gobuild.versions import GOBUILD, REPO, VERSIONS_FILE, Versions, parse_versions

VERSIONS = Versions.load()
CONTROL_PLANE = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}


def names(selection: Selection, *groups: Group) -> set[str]:
    return {name for g in groups for b in builds(selection, VERSIONS, group=g) for name in b.names}


# --- cache keys: byte-identical to what the bash script printed, or every warm cache rebuilds -----------------


def test_the_cache_keys_of_the_current_versions_env_are_the_ones_warm_caches_have() -> None:
    assert cachekeys.control_plane_key(VERSIONS) == "k8s-v1.33.13_etcd-v3.5.21_kwok-v0.7.0"
    assert cachekeys.operators_key(VERSIONS) == (
        "operators_training-operator-v1.9.2+v1.9.1_katib-v0.19.0_kserve-v0.16.0+v0.14.1+v0.15.2"
        "_jobset-v0.11.0+v0.10.1_trainer-v2.2.0+v2.1.0"
    )
    assert cachekeys.flux_key(VERSIONS) == "flux_source-controller-v1.7.0_kustomize-controller-v1.7.2"
    assert cachekeys.argocd_key(VERSIONS) == "argocd-v3.2.11_kustomize-v5.5.0"


def test_the_cache_root_is_kfctl_e2e_cache_or_the_users_cache() -> None:
    assert cachekeys.cache_root({"KFCTL_E2E_CACHE": "/c"}) == Path("/c")
    assert cachekeys.cache_root({}) == Path.home() / ".cache" / "kfctl-e2e"
    assert cachekeys.cache_root({"KFCTL_E2E_CACHE": ""}) == Path.home() / ".cache" / "kfctl-e2e"


@pytest.mark.parametrize(
    ("flag", "key"),
    [
        pytest.param("--print-bin-dir", "k8s-v1.33.13_etcd-v3.5.21_kwok-v0.7.0", id="bin"),
        pytest.param("--print-operators-dir", cachekeys.operators_key(VERSIONS), id="operators"),
        pytest.param("--print-flux-dir", cachekeys.flux_key(VERSIONS), id="flux"),
        pytest.param("--print-argocd-dir", cachekeys.argocd_key(VERSIONS), id="argocd"),
    ],
)
def test_print_flags_print_one_dir_and_build_nothing(flag: str, key: str, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    # No PATH: had it tried to build, it would have failed for want of go.
    assert cli.main([flag], environ={"KFCTL_E2E_CACHE": str(tmp_path), "PATH": ""}, stdout=out, stderr=err) == 0
    assert out.getvalue() == f"{tmp_path}/{key}/bin\n"
    assert err.getvalue() == ""
    assert list(tmp_path.iterdir()) == []


def test_other_releases_are_comma_separated_and_may_be_absent() -> None:
    v = Versions(parse_versions("KSERVE_VERSION=v3\nKSERVE_OTHER_VERSIONS=v1, v2,\nKATIB_VERSION=v9\n"))
    assert v.others("KSERVE_VERSION") == ("v1", "v2")
    assert v.others("KATIB_VERSION") == ()


def test_the_last_line_of_a_key_wins_and_comments_are_not_read() -> None:
    assert parse_versions("# A=commented\nA=v1\nA=v2\nnot a pin\n") == {"A": "v2"}


# --- the sets: what each flag builds ----------------------------------------------------------------------------


def test_a_default_run_builds_the_control_plane_and_helm() -> None:
    assert names(Selection(), "control plane") == CONTROL_PLANE
    assert Selection().groups() == ("control plane", "helm", "kustomize")


def test_demo_builds_exactly_the_control_plane_and_the_three_operators_the_demo_runs() -> None:
    demo = Selection(demo=True)
    assert demo.groups() == ("control plane", "kustomize", "demo operators")
    assert names(demo, "control plane") == CONTROL_PLANE
    assert set(localcluster.BINARIES) <= names(demo, "control plane")  # what `e2e/cluster up` starts
    assert names(demo, "demo operators", "other operators") == {
        "training-operator",
        "katib-controller",
        "kserve-manager",
    }


def test_the_demo_operators_are_those_the_runtime_runs_for_the_kind_platforms_default_components() -> None:
    """Every image of the kind platform's default components the runtime runs a binary for, but those built from a
    fixture tarball rather than a Go module (notebook-controller: the demo leaves its pod simulated)."""
    platform = yaml.safe_load((REPO / "platforms" / "kind" / "platform.yaml").read_text())
    images = {
        m.group(1)
        for component in platform["defaultComponents"]
        for path in (REPO / "manifests" / component).rglob("*.yaml")
        for m in re.finditer(r"image:\s*(\S+)", path.read_text())
    }
    runnable = {runtime.binary_name(image) for image in images} - {None}
    from_fixture = {
        b for r in in_groups("other operators") if r.source == "fixture tarball" for b in releases(r, VERSIONS)[0].names
    }
    assert runnable - from_fixture == names(Selection(demo=True), "demo operators")


def test_operators_builds_every_release_the_runtime_can_run() -> None:
    selection = Selection(operators=True)
    assert names(selection, "demo operators", "other operators") == operator_binaries(VERSIONS)
    # and `--webapps` the launchers of the web UIs, in the same dir
    launchers = webapps.launcher_names(VERSIONS.get("KUBEFLOW_COMPONENTS_VERSION"))
    assert launchers == {
        "centraldashboard-v1.10.0",
        "jupyter-web-app-v1.10.0",
        "volumes-web-app-v1.10.0",
        "tensorboards-web-app-v1.10.0",
    }
    assert operator_binaries(VERSIONS) | launchers == {
        name for releases_ in runtime.RUNNABLE_IMAGES.values() for name in releases_.values()
    }
    assert {"kserve-manager-v0.14.1", "spark-operator-v2.4.0", "oauth2-proxy-v7.15.6"} <= operator_binaries(VERSIONS)


def test_flux_builds_both_controllers_into_their_own_set() -> None:
    assert names(Selection(flux=True), "flux") == {"source-controller", "kustomize-controller"}
    assert names(Selection(), "flux") == set()


def test_argocd_builds_its_one_binary_with_upstreams_version_flag() -> None:
    [build] = builds(Selection(argocd=True), VERSIONS, group="argocd")
    assert build.outputs == (("argocd", "github.com/argoproj/argo-cd/v3/cmd"),)
    assert (build.wrapper, build.recipe.directives) == ("argocd", "upstream's")
    # upstream's Makefile: -X <common>.version=$(cat VERSION), the release without its "v"
    assert build.ldflags == "-s -w -X github.com/argoproj/argo-cd/v3/common.version=3.2.11"
    assert names(Selection(), "argocd") == set()
    assert Selection(argocd=True).groups()[-1] == "argocd"


def test_an_other_release_is_built_from_its_own_wrapper_under_its_own_name() -> None:
    main, *others = releases(recipe("kserve-manager"), VERSIONS)
    assert (main.names, main.wrapper) == (("kserve-manager",), "kserve")
    assert [(b.names, b.wrapper) for b in others] == [
        (("kserve-manager-v0.14.1",), "kserve-v0.14.1"),
        (("kserve-manager-v0.15.2",), "kserve-v0.15.2"),
    ]


def test_every_build_of_a_full_run_has_its_own_scratch_dir() -> None:
    selection = Selection(operators=True, flux=True, argocd=True)
    workdirs = [b.workdir for group in selection.groups() for b in builds(selection, VERSIONS, group=group)]
    assert len(workdirs) == len(set(workdirs)), sorted(w for w in workdirs if workdirs.count(w) > 1)
    assert {"knative-serving-v0.43.1", "knative-serving-v0.48.1"} <= set(workdirs)


def test_the_kubernetes_ldflags_carry_the_release() -> None:
    [k8s] = releases(recipe("kubernetes"), VERSIONS)
    assert "-X k8s.io/component-base/version.gitVersion=v1.33.13" in k8s.ldflags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=33 " in k8s.ldflags
    assert "{" not in k8s.ldflags


# --- pin checks -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selection",
    [Selection(), Selection(demo=True), Selection(operators=True, flux=True)],
    ids=["default", "demo", "all"],
)
def test_the_repositorys_wrappers_agree_with_versions_env(selection: Selection) -> None:
    pins.check_pins(selection, VERSIONS)


@pytest.fixture
def gobuild(tmp_path: Path) -> Path:
    copy = tmp_path / "gobuild"
    shutil.copytree(GOBUILD, copy, ignore=shutil.ignore_patterns("go.sum", "*.go"))
    return copy


def test_a_wrapper_out_of_step_names_its_go_mod_and_the_line_it_lacks(gobuild: Path) -> None:
    go_mod = gobuild / "katib" / "go.mod"
    go_mod.write_text(
        go_mod.read_text().replace(
            "require github.com/kubeflow/katib v0.19.0", "require github.com/kubeflow/katib v0.18.0"
        )
    )
    with pytest.raises(PinError) as failed:
        pins.check_pins(Selection(operators=True), VERSIONS, gobuild=gobuild)
    assert str(failed.value) == (
        f"{go_mod} does not match {VERSIONS_FILE}: expected the line 'require github.com/kubeflow/katib v0.19.0'.\n"
        "Edit the wrapper go.mod to the versions in versions.env and run e2e/build-binaries --operators --tidy."
    )
    pins.check_pins(Selection(), VERSIONS, gobuild=gobuild)  # a default run does not build katib


def test_an_other_release_without_a_wrapper_names_the_wrapper_to_copy(gobuild: Path) -> None:
    shutil.rmtree(gobuild / "kserve-v0.14.1")
    with pytest.raises(PinError, match=r"no wrapper module .*/kserve-v0\.14\.1/go\.mod for a version .* names"):
        pins.check_pins(Selection(demo=True), VERSIONS, gobuild=gobuild)


def test_a_flux_wrapper_must_require_the_api_module_at_the_same_release(gobuild: Path) -> None:
    go_mod = gobuild / "flux-source-controller" / "go.mod"
    go_mod.write_text(go_mod.read_text().replace("source-controller/api v1.7.0", "source-controller/api v1.6.0"))
    with pytest.raises(PinError, match=r"expected the line 'require github.com/fluxcd/source-controller/api v1\.7\.0'"):
        pins.check_pins(Selection(flux=True), VERSIONS, gobuild=gobuild)


def test_a_staging_replace_at_another_release_is_named(gobuild: Path) -> None:
    go_mod = gobuild / "k8s" / "go.mod"
    text = go_mod.read_text()
    [first] = re.findall(r"=> k8s\.io/api v0\.33\.13", text)
    go_mod.write_text(text.replace(first, "=> k8s.io/api v0.33.12"))
    with pytest.raises(
        PinError,
        match=r"a staging replace in .*k8s/go\.mod is not at v0\.33\.13 .*'k8s\.io/api => k8s\.io/api v0\.33\.12'",
    ):
        pins.check_pins(Selection(), VERSIONS, gobuild=gobuild)


# --- the command line ---------------------------------------------------------------------------------------------


def run_cli(
    argv: list[str], *, environ: dict[str, str] | None = None, versions: Versions | None = None
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, environ=environ, versions=versions, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_an_unknown_argument_exits_2_naming_it() -> None:
    assert run_cli(["--operators", "--bogus", "-h"]) == (2, "", "build-binaries: unknown argument: --bogus\n")


def test_help_exits_0_with_the_usage() -> None:
    code, out, err = run_cli(["-h", "--bogus"])
    assert (code, err) == (0, "")
    assert "Usage: e2e/build-binaries [--print-bin-dir]" in out
    for flag in cli.FLAGS:
        assert f"  {flag} " in out


def test_a_version_versions_env_lacks_exits_2_naming_the_file_and_the_key(tmp_path: Path) -> None:
    versions = Versions(
        {k: v for k, v in VERSIONS.values.items() if k != "KNATIVE_SERVING_VERSION"}, tmp_path / "v.env"
    )
    env = {"KFCTL_E2E_CACHE": str(tmp_path)}
    assert run_cli(["--print-bin-dir"], environ=env, versions=versions)[0] == 0  # a default run never reads it
    assert run_cli(["--print-operators-dir"], environ=env, versions=versions) == (
        2,
        "",
        f"build-binaries: {tmp_path}/v.env has no KNATIVE_SERVING_VERSION\n",
    )


def test_no_go_on_path_exits_3(tmp_path: Path) -> None:
    code, out, err = run_cli([], environ={"KFCTL_E2E_CACHE": str(tmp_path), "PATH": str(tmp_path)})
    assert (code, out) == (3, "")
    assert err.startswith("build-binaries: no Go toolchain on PATH.\n")


# --- a run, with a fake go ----------------------------------------------------------------------------------------

FAKE_GO = """\
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["GO_CALLS"], "a") as calls:
    calls.write(json.dumps(args) + "\\n")
def touch(path):
    Path(path).write_text("#!/bin/sh\\n")
    Path(path).chmod(0o755)
if args[0] == "version":
    print("go version go0.0 fake")
elif args[:2] == ["mod", "edit"]:
    print("{}")  # no replace or exclude directives, upstream's nor the wrapper's
elif args[:2] == ["list", "-m"]:
    print("/upstream/go.mod")
elif args[0] == "install":
    touch(Path(os.environ["GOBIN"]) / args[-1].split("@")[0].split("/")[-1])
elif args[0] == "build":
    target = args[args.index("-o") + 1]
    packages = args[args.index("-o") + 2:]
    if target.endswith("/"):
        for package in packages:
            touch(target + package.split("/")[-1])
    else:
        touch(target)
"""
KUBECTL_1_32 = """\
import sys
if sys.argv[1:3] == ["version", "--client"]:
    print('{"clientVersion": {"gitVersion": "v1.32.4-dispatcher"}}')
"""


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    """A PATH with a fake go, a kustomize (so none is built) and a kubectl v1.32; the cache under tmp_path."""
    path = tmp_path / "path"
    path.mkdir()
    for name, script in (("go", FAKE_GO), ("kubectl", KUBECTL_1_32), ("kustomize", "")):
        (path / name).write_text(f"#!{sys.executable}\n{script}")
        (path / name).chmod(0o755)
    return {"PATH": str(path), "KFCTL_E2E_CACHE": str(tmp_path / "cache"), "GO_CALLS": str(tmp_path / "calls")}


def go_calls(machine: dict[str, str]) -> list[list[str]]:
    return [json.loads(line) for line in Path(machine["GO_CALLS"]).read_text().splitlines()]


def test_a_cold_demo_builds_the_control_plane_without_kubectl_when_the_machines_is_close_enough(
    machine: dict[str, str],
) -> None:
    code, out, err = run_cli(["--demo"], environ=machine)
    assert code == 0, err
    cache = Path(machine["KFCTL_E2E_CACHE"])
    bin_dir = cache / cachekeys.control_plane_key(VERSIONS) / "bin"
    operators = cache / cachekeys.operators_key(VERSIONS) / "bin"
    assert out == f"{operators}\n{bin_dir}\n"
    assert {p.name for p in bin_dir.iterdir()} == CONTROL_PLANE - {"kubectl"}
    assert {p.name for p in operators.iterdir()} == {"training-operator", "katib-controller", "kserve-manager"}
    kubectl = f"{machine['PATH']}/kubectl (v1.32.4-dispatcher)"
    assert f"kubectl: not built for the demo: {kubectl} is within one minor of v1.33.13 (make test builds it)" in err
    assert "kubernetes v1.33.13: building kube-apiserver kube-controller-manager kube-scheduler (a cold build" in err
    assert "helm v3.21.0: not built for the demo" in err
    builds_ = [c for c in go_calls(machine) if c[0] in ("build", "install")]
    # (what, compiled without inlining): only the API server's build and etcd keep it
    assert [(c[-1], "-gcflags=all=-dwarf=false -l" in c) for c in builds_] == [
        ("go.etcd.io/etcd/server/v3", False),
        ("k8s.io/kubernetes/cmd/kube-scheduler", False),
        ("sigs.k8s.io/kwok/cmd/kwok@v0.7.0", True),
        ("github.com/kubeflow/training-operator/cmd/training-operator.v1", True),
        ("github.com/kubeflow/katib/cmd/katib-controller/v1beta1", True),
        ("github.com/kserve/kserve/cmd/manager", True),
    ]
    assert not list(cache.rglob(".build.*")), "scratch dirs are removed"


def test_a_warm_cache_builds_nothing_and_says_what_it_reused(machine: dict[str, str]) -> None:
    cold = run_cli(["--demo"], environ=machine)
    Path(machine["GO_CALLS"]).unlink()
    code, out, err = run_cli(["--demo"], environ=machine)
    assert (code, out) == (0, cold[1])
    assert [c[0] for c in go_calls(machine)] == ["version"]
    for label in (
        "etcd v3.5.21",
        "kubernetes v1.33.13",
        "kwok v0.7.0",
        "training-operator v1.9.2",
        "kserve-manager v0.16.0",
    ):
        assert f"] {label}: cached\n" in err
    # make test later builds what the demo left out, and only that
    code, _, err = run_cli([], environ=machine)
    assert code == 0, err
    built = [c for c in go_calls(machine) if c[0] in ("build", "install")]
    assert [c[-1] for c in built] == ["k8s.io/kubernetes/cmd/kubectl", "helm.sh/helm/v3/cmd/helm@v3.21.0"]


def test_a_kubectl_two_minors_away_is_not_enough(machine: dict[str, str]) -> None:
    kubectl = Path(machine["PATH"]) / "kubectl"
    kubectl.write_text(kubectl.read_text().replace("v1.32.4", "v1.31.0"))
    code, _, err = run_cli(["--demo"], environ=machine)
    assert code == 0, err
    assert "kubernetes v1.33.13: building kube-apiserver kube-controller-manager kube-scheduler kubectl (" in err
    assert "kubectl: not built" not in err
