"""The run: builds what a cache dir lacks, one set after another, and reuses a binary already there as it is.

Per cache dir: one build at a time (a flock on <dir>/.lock: several e2e sessions may start together), into a scratch
dir inside it that is renamed into place, so a cache never holds half a binary. The go commands run with the
environment the recipes were measured with (``GO_ENV``); their output goes to stderr, so stdout stays the caller's
(cli prints the dirs there). Progress goes to `log`, one line per build, with a cold build's estimate when it starts
and its time when it ends; besides go's own output, this module prints nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kfctl_testbed.gobuild import cachekeys
from kfctl_testbed.gobuild.errors import BuildError, GoFailed, NoToolchain, PinError
from kfctl_testbed.gobuild.recipes import Build, Selection, builds, go_output_name, recipe, release
from kfctl_testbed.gobuild.versions import GOBUILD, REPO, Versions

Log = Callable[[str], None]
# GOGC=400: the compiler collects garbage four times less often. It changes no output (the same binary, byte for
# byte) and so no cache key; a cold helm build took 141 s instead of 162-173 s, kwok 162 s instead of 192 s (-13 to
# -18 %), their largest process 0.92 and 1.10 GB instead of 0.81 and 1.01 GB.
# -gcflags=all=-dwarf=false: the compiler writes no debug information, which the linker's -w threw away anyway. The
# code is the same; the build ID and the recorded flags differ, and no cache key names flags, so a warm cache stays
# valid. Measured on top of GOGC=400 (cold, modules downloaded): helm 118 s instead of 133 s, kwok 147 s instead
# of 161 s (-9 to -11 %). In GOFLAGS, so every build takes it (go mod and go list ignore it).
GO_ENV = {
    "GOTOOLCHAIN": "local",
    "CGO_ENABLED": "0",
    "GOFLAGS": "-buildvcs=false -gcflags=all=-dwarf=false",
    "GOGC": "400",
}
# -l: no inlining, for every binary but the API server, etcd and kustomize (Recipe.inline), whose CPU every test
# spends. The code is still optimized, only calls stay calls; the operators, Flux, kwok and Helm spend about 2 of an
# e2e run's 66 CPU-min. Cold, modules downloaded: helm 87 s instead of 127 s, kwok 109 s instead of 150 s (-27 to
# -31 %); -N -l (no optimization at all) was slower than -l alone (helm 101 s). On the command line, where it
# replaces GOFLAGS' -gcflags for the same pattern.
NO_INLINE = "-gcflags=all=-dwarf=false -l"


def build_flags(ldflags: str, *, inline: bool) -> list[str]:
    """`go build`'s and `go install`'s flags besides GOFLAGS'."""
    return ["-trimpath", *([] if inline else [NO_INLINE]), "-ldflags", ldflags]


@dataclass(frozen=True)
class Options:
    selection: Selection = field(default_factory=Selection)
    tidy: bool = False  # regenerate the wrappers' go.sum (go mod tidy) before building
    force: bool = False  # rebuild binaries already in the cache


@dataclass(frozen=True)
class Dirs:
    """The cache's bin dirs for one versions.env; operators/flux/argocd are None when the run does not build them."""

    bin: Path
    operators: Path | None = None
    flux: Path | None = None
    argocd: Path | None = None

    def printed(self) -> list[Path]:
        """stdout's contract: the bin dir is the last line, the operators' dir before it, Flux's before those,
        Argo CD's first."""
        return [d for d in (self.argocd, self.flux, self.operators) if d is not None] + [self.bin]


def dirs(versions: Versions, selection: Selection, *, root: Path) -> Dirs:
    operators = selection.operators or selection.demo
    return Dirs(
        cachekeys.bin_dir(root, cachekeys.control_plane_key(versions)),
        cachekeys.bin_dir(root, cachekeys.operators_key(versions)) if operators else None,
        cachekeys.bin_dir(root, cachekeys.flux_key(versions)) if selection.flux else None,
        cachekeys.bin_dir(root, cachekeys.argocd_key(versions)) if selection.argocd else None,
    )


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def kubectl_version(kubectl: Path) -> str:
    """`kubectl version --client`'s gitVersion ("v1.32.4-dispatcher"), or "" when it does not say."""
    try:
        out = subprocess.run(
            [str(kubectl), "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=20
        )
        version: Any = json.loads(out.stdout)["clientVersion"]["gitVersion"]
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError):
        return ""
    return version if isinstance(version, str) else ""


def minor_of(version: str) -> tuple[int, int] | None:
    parts = version.removeprefix("v").split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def within_one_minor(version: str, of: str) -> bool:
    """kubectl's supported skew: one minor either side of the API server's."""
    a, b = minor_of(version), minor_of(of)
    return a is not None and b is not None and a[0] == b[0] and abs(a[1] - b[1]) <= 1


def machine_kubectl(bin_dir: Path, path_env: str) -> Path | None:
    """The first kubectl on PATH that is not the cache's own."""
    for entry in path_env.split(os.pathsep):
        if not entry:
            continue
        candidate = Path(entry) / "kubectl"
        if is_executable(candidate) and candidate.resolve().parent != bin_dir.resolve():
            return candidate
    return None


@contextmanager
def locked_scratch(cache_dir: Path, log: Log) -> Iterator[Path]:
    """Holds <cache_dir>/.lock (waiting, and saying so, when another build holds it) and yields a scratch dir
    inside cache_dir, removed afterwards."""
    (cache_dir / "bin").mkdir(parents=True, exist_ok=True)
    lock_path = cache_dir / ".lock"
    with open(lock_path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another build holds {lock_path}; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        scratch = Path(tempfile.mkdtemp(prefix=".build.", dir=cache_dir))
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class Runner:
    versions: Versions
    options: Options
    dirs: Dirs
    log: Log
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    gobuild: Path = GOBUILD
    fixtures: Path = REPO.parent / "shared" / "fixtures"
    started: float = field(default_factory=time.monotonic)

    # --- go ------------------------------------------------------------------------------------------------

    def _env(self, extra: Mapping[str, str] = {}) -> dict[str, str]:
        env = {**self.environ, **GO_ENV}
        env.update(extra)
        return env

    def go(
        self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] = {}, what: str, capture: bool = False
    ) -> str:
        """Runs `go args` in cwd; its output goes to stderr (or is returned with `capture`). GoFailed on failure."""
        done = subprocess.run(
            ["go", *args],
            cwd=cwd,
            env=self._env(env),
            stdout=subprocess.PIPE if capture else sys.stderr,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise GoFailed(f"{what}: go {args[0]} failed (exit {done.returncode})", returncode=done.returncode)
        return done.stdout if capture else ""

    def go_version(self) -> str:
        if shutil.which("go", path=self.environ.get("PATH")) is None:
            etcd, k8s, kwok = (self.versions.get(k) for k in ("ETCD_VERSION", "KUBERNETES_VERSION", "KWOK_VERSION"))
            raise NoToolchain(
                "no Go toolchain on PATH.\n"
                "Install Go >= 1.24 (>= 1.25 for --operators; e.g. the distribution's golang package or an official "
                f"Go\nrelease), or put prebuilt etcd {etcd}, kube-apiserver/kube-controller-manager/kube-scheduler\n"
                f"{k8s} and kwok {kwok} into {self.dirs.bin}."
            )
        return self.go(["version"], cwd=Path.cwd(), what="go version", capture=True).strip()

    # --- progress ------------------------------------------------------------------------------------------

    def so_far(self) -> int:
        return round(time.monotonic() - self.started)

    def missing(self, build: Build, bin_dir: Path) -> list[tuple[str, str]]:
        return [o for o in build.outputs if self.options.force or not is_executable(bin_dir / o[0])]

    # --- one build -----------------------------------------------------------------------------------------

    def build(self, build: Build, *, bin_dir: Path, scratch: Path, skip: Sequence[str] = ()) -> None:
        """`build` into bin_dir, the outputs it lacks only (but those in `skip`); says "cached" when it lacks none."""
        todo = [o for o in self.missing(build, bin_dir) if o[0] not in skip]
        if not todo:
            self.log(f"{build.label} {build.version}: cached")
            return
        if build.recipe.source == "fixture tarball":
            self._from_fixture(build, todo, bin_dir=bin_dir, scratch=scratch)
            return
        names = " " + " ".join(name for name, _ in todo) if len(build.recipe.commands) > 1 else ""
        estimate = f" ({build.recipe.estimate})" if build.recipe.estimate else ""
        self.log(f"{build.label} {build.version}: building{names}{estimate}")
        t0 = time.monotonic()
        out = scratch / build.workdir
        out.mkdir()
        if build.recipe.source == "go install":
            self._go_install(build, out)
            produced = {name: out / go_output_name(pkg) for name, pkg in todo}
        else:
            self._go_build(build, todo, out)
            if len(build.recipe.commands) == 1:
                produced = {todo[0][0]: out / todo[0][0]}
            else:
                produced = {name: out / go_output_name(pkg) for name, pkg in todo}
        for name, path in produced.items():
            os.replace(path, bin_dir / name)
        self.log(f"{build.label}: built in {round(time.monotonic() - t0)} s ({self.so_far()} s so far)")

    def _go_install(self, build: Build, out: Path) -> None:
        [(_, package)] = build.outputs
        self.go(
            ["install", *build_flags(build.ldflags, inline=build.recipe.inline), f"{package}@{build.version}"],
            cwd=out,
            env={"GOBIN": str(out)},
            what=build.label,
        )

    def _wrapper_env(self, build: Build) -> dict[str, str]:
        if build.version not in build.recipe.unknown_to_sumdb:
            return {}
        # The checksum database's lookup of this release is 404: its wrapper's go.sum pins the hashes the proxy
        # served (and upstream's go.sum lists), so only the module itself is exempted.
        existing = self.environ.get("GONOSUMDB", "")
        return {"GONOSUMDB": build.recipe.module + (f",{existing}" if existing else "")}

    def _go_build(self, build: Build, todo: Sequence[tuple[str, str]], out: Path) -> None:
        r = build.recipe
        wrapper = self.gobuild / build.wrapper
        env = self._wrapper_env(build)
        if self.options.tidy:
            if r.seed_upstream_sum:
                # Seed go.sum with upstream's own first: some of katib's dependencies are unknown to the checksum
                # database too, and `go install` would have trusted upstream's go.sum for them.
                info = self.go(
                    ["mod", "download", "-json", f"{r.module}@{build.version}"],
                    cwd=wrapper,
                    env=env,
                    what=build.label,
                    capture=True,
                )
                upstream_sum = Path(json.loads(info)["Dir"]) / "go.sum"
                with open(wrapper / "go.sum", "a") as go_sum:
                    go_sum.write(upstream_sum.read_text())
            self.go(["mod", "tidy"], cwd=wrapper, env=env, what=build.label)
        if r.directives != "unchecked":
            self._check_directives(build, wrapper, env)
        packages = [pkg for _, pkg in todo]
        target = str(out / todo[0][0]) if len(r.commands) == 1 else f"{out}/"
        args = ["build", *build_flags(build.ldflags, inline=r.inline), "-o", target, *packages]
        if not r.linkname_retry:
            self.go(args, cwd=wrapper, env=env, what=build.label)
            return
        done = subprocess.run(["go", *args], cwd=wrapper, env=self._env(env), stdout=sys.stderr, stderr=subprocess.PIPE)
        if done.returncode == 0:
            return
        sys.stderr.write(done.stderr.decode(errors="replace"))
        if b"linkname" not in done.stderr:
            raise GoFailed(f"{build.label}: go build failed (exit {done.returncode})", returncode=1)
        self.log("link refused a go:linkname; retrying with -checklinkname=0")
        args[args.index("-ldflags") + 1] = f"{build.ldflags} -checklinkname=0"
        self.go(args, cwd=wrapper, env=env, what=build.label)

    def _directives(self, go_mod: str, *, cwd: Path, env: Mapping[str, str], drop_api_of: str = "") -> Any:
        """A go.mod's replace and exclude directives (Flux: but a local-path replace of <module>/api)."""
        m = json.loads(self.go(["mod", "edit", "-json", go_mod], cwd=cwd, env=env, what=go_mod, capture=True))
        replace = [
            r
            for r in m.get("Replace") or []
            if not (drop_api_of and r["Old"]["Path"] == f"{drop_api_of}/api" and r["New"]["Path"].startswith("./"))
        ]
        return [replace, m.get("Exclude") or []]

    def _check_directives(self, build: Build, wrapper: Path, env: Mapping[str, str]) -> None:
        r = build.recipe
        upstream = self.go(
            ["list", "-m", "-f", "{{.GoMod}}", r.module], cwd=wrapper, env=env, what=build.label, capture=True
        ).strip()
        api = r.module if r.directives == "upstream's but ./api" else ""
        ours = self._directives("go.mod", cwd=wrapper, env=env, drop_api_of=api)
        theirs = self._directives(upstream, cwd=wrapper, env=env, drop_api_of=api)
        if ours != theirs:
            but = ", but for its ./api" if api else ""
            raise PinError(
                f"the replace/exclude directives of e2e/gobuild/{build.wrapper}/go.mod differ from {r.module} "
                f"{build.version}'s ({upstream}{but}); copy them and run e2e/build-binaries {r.tidy_flags}"
            )

    def _from_fixture(self, build: Build, todo: Sequence[tuple[str, str]], *, bin_dir: Path, scratch: Path) -> None:
        tarball = (
            Path(self.environ.get("KFCTL_FIXTURES") or self.fixtures) / f"kubeflow-components-{build.version}.tar.gz"
        )
        if not tarball.is_file():
            self.log(f"{build.label} {build.version}: NOT BUILT: no source tarball {tarball}")
            return
        src = scratch / "kubeflow-components"
        src.mkdir()
        untar = subprocess.run(["tar", "-xzf", str(tarball), "-C", str(src), "--strip-components=1"], check=False)
        if untar.returncode != 0:
            raise BuildError(f"{build.label} {build.version}: tar could not unpack {tarball}")
        # Their go.sum files are incomplete: dependencies come from the proxy as the build finds them.
        env = {"GOFLAGS": f"{GO_ENV['GOFLAGS']} -mod=mod"}
        for name, directory in todo:
            t0 = time.monotonic()
            self.log(f"{name}: building from {tarball.name}")
            self.go(
                ["build", *build_flags("-s -w", inline=build.recipe.inline), "-o", str(scratch / name), "."],
                cwd=src / "components" / directory,
                env=env,
                what=name,
            )
            os.replace(scratch / name, bin_dir / name)
            self.log(f"{name}: built in {round(time.monotonic() - t0)} s ({self.so_far()} s so far)")

    # --- the sets --------------------------------------------------------------------------------------------

    def run(self, go_version: str) -> Dirs:
        """Every set of the selection, in order: the control plane (helm, kustomize), the operators, Flux, Argo CD."""
        selection = self.options.selection
        with locked_scratch(self.dirs.bin.parent, self.log) as scratch:
            self.started = time.monotonic()
            self.log(f"go: {go_version}; cache: {self.dirs.bin}")
            self.control_plane(scratch)
        if self.dirs.operators is not None:
            # The control plane is done: other sessions' builds of it go on while the operators build.
            with locked_scratch(self.dirs.operators.parent, self.log) as scratch:
                if selection.demo:
                    self.log(
                        "demo: training-operator, katib-controller and kserve-manager only "
                        "(cold: about 9 min on 2 cores)"
                    )
                for b in builds(selection, self.versions, group="demo operators"):
                    self.build(b, bin_dir=self.dirs.operators, scratch=scratch)
                for b in builds(selection, self.versions, group="other operators"):
                    self.build(b, bin_dir=self.dirs.operators, scratch=scratch)
                self.log(f"operators: {self.dirs.operators}")
        if self.dirs.flux is not None:
            with locked_scratch(self.dirs.flux.parent, self.log) as scratch:
                for b in builds(selection, self.versions, group="flux"):
                    self.build(b, bin_dir=self.dirs.flux, scratch=scratch)
                self.log(f"flux: {self.dirs.flux}")
        if self.dirs.argocd is not None:
            with locked_scratch(self.dirs.argocd.parent, self.log) as scratch:
                for b in builds(selection, self.versions, group="argocd"):
                    self.build(b, bin_dir=self.dirs.argocd, scratch=scratch)
                # The repo-server runs `kustomize build` (a kubectl's embedded one will not do): the release
                # versions.env pins, beside Argo CD whatever the machine has.
                kustomize = release(recipe("kustomize"), self.versions.get("KUSTOMIZE_VERSION"))
                self.build(kustomize, bin_dir=self.dirs.argocd, scratch=scratch)
                self.log(f"argocd: {self.dirs.argocd}")
        self.log(f"done in {self.so_far()} s")
        return self.dirs

    def control_plane(self, scratch: Path) -> None:
        selection, bin_dir = self.options.selection, self.dirs.bin
        for b in builds(selection, self.versions, group="control plane"):
            skip = self.demo_kubectl(b) if selection.demo and b.recipe.label == "kubernetes" else ()
            self.build(b, bin_dir=bin_dir, scratch=scratch, skip=skip)
        helm = release(recipe("helm"), self.versions.get("HELM_VERSION"))
        if not self.options.force and self.helm_version(bin_dir / "helm") == helm.version:
            self.log(f"helm {helm.version}: cached")
        elif selection.demo:
            self.log(f"helm {helm.version}: not built for the demo (the ownership tests use it; make test builds it)")
        else:
            self.build(helm, bin_dir=bin_dir, scratch=scratch)
        self.kustomize(scratch)

    def demo_kubectl(self, kubernetes: Build) -> tuple[str, ...]:
        """For --demo: kubectl is not built when the machine's is within one minor of the cluster's (nothing the demo
        runs takes kubectl from the cache dir; kfctl renders with whichever `kubectl kustomize` is on PATH)."""
        if "kubectl" not in {name for name, _ in self.missing(kubernetes, self.dirs.bin)}:
            return ()
        kubectl = machine_kubectl(self.dirs.bin, self.environ.get("PATH", ""))
        if kubectl is None:
            return ()
        version = kubectl_version(kubectl)
        if not within_one_minor(version, kubernetes.version):
            return ()
        self.log(
            f"kubectl: not built for the demo: {kubectl} ({version}) is within one minor of {kubernetes.version} "
            "(make test builds it)"
        )
        return ("kubectl",)

    def helm_version(self, helm: Path) -> str:
        if not is_executable(helm):
            return ""
        try:
            out = subprocess.run(
                [str(helm), "version", "--template", "{{.Version}}"], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    def kustomize(self, scratch: Path) -> None:
        """kustomize, only where nothing provides it: a `kustomize` on PATH, or a kubectl that embeds one."""
        path = self.environ.get("PATH")
        found = shutil.which("kustomize", path=path)
        if found:
            self.log(f"kustomize: using {found}")
            return
        kubectl = shutil.which("kubectl", path=path)
        if kubectl and self.embeds_kustomize(Path(kubectl)):
            self.log(f"kustomize: using 'kubectl kustomize' ({kubectl})")
            return
        if is_executable(self.dirs.bin / "kubectl") and self.embeds_kustomize(self.dirs.bin / "kubectl"):
            self.log(f"kustomize: using '{self.dirs.bin}/kubectl kustomize'")
            return
        self.build(
            release(recipe("kustomize"), self.versions.get("KUSTOMIZE_VERSION")), bin_dir=self.dirs.bin, scratch=scratch
        )

    def embeds_kustomize(self, kubectl: Path) -> bool:
        try:
            done = subprocess.run([str(kubectl), "kustomize", "--help"], capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0
