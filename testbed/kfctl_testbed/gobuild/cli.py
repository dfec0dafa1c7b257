"""`e2e/build-binaries` (`python -m kfctl_testbed.gobuild`): flags, the stdout contract, exit codes.

The one place that prints: the dirs on stdout, progress and errors on stderr. Exit codes: 0 done; 1 a go command
failed (go's own status); 2 an unknown argument, a version versions.env lacks, a wrapper out of step with it;
3 no Go toolchain.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from kfctl_testbed.gobuild import cachekeys, pins, webapps
from kfctl_testbed.gobuild.errors import BuildError, UsageError
from kfctl_testbed.gobuild.recipes import Selection, in_groups
from kfctl_testbed.gobuild.run import Options, Runner, dirs
from kfctl_testbed.gobuild.versions import VERSIONS_FILE, Versions

HELP = """\
Build (or reuse from the cache) the binaries of kfctl's local e2e control plane:
  etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, helm
  and kustomize, only when neither `kustomize` nor `kubectl kustomize` is available.
With --operators (make setup passes it; testbed/kfctl_testbed/runtime.py runs them) also the Kubeflow operators:
  training-operator, katib-controller, kserve-manager, jobset-controller and trainer-controller-manager, and the
  other releases versions.env names (*_OTHER_VERSIONS) as <binary>-<version>, e.g. kserve-manager-v0.14.1; and
  kubeflow/kubeflow's profile-controller, kfam, notebook-controller and poddefaults-webhook (<binary>-<version>)
  from the source in ../shared/fixtures; the Spark operator (spark-operator-<version>) and Knative Serving's
  controller, webhook and autoscaler (knative-serving-<command>-<version>).
With --flux (make setup passes it; e2e/test_gitops_flux.py runs them) also Flux's source-controller and
  kustomize-controller.
With --argocd (make setup passes it; e2e/test_gitops_argocd.py runs it) also Argo CD's one binary, argocd (run as
  argocd-application-controller, argocd-repo-server, argocd-cmp-server by its basename or $ARGOCD_BINARY_NAME),
  and the kustomize its repo-server runs.
With --webapps (make setup passes it) also kubeflow/kubeflow's web UIs from the source in ../shared/fixtures: the
  central dashboard (npm, webpack, node) and the Jupyter, volumes and TensorBoards web apps (their Angular frontends
  with npm, their Flask backends in a venv with pip), into ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/webapps/, each keyed
  by the fixture's and its lockfiles' sha256; a launcher <app>-<version> in the operators' bin directory runs each as
  its image does (testbed/kfctl_testbed/gobuild/webapps.py).
With --demo (make demo passes it) only what the demo runs: the control plane and the three operators of the
  kind platform's default components at their main versions (training-operator, katib-controller,
  kserve-manager); no helm, no other releases, no JobSet or Trainer, and no kubectl when the machine's is
  within one minor of the cluster's. `make test` builds the rest later.

Versions come from e2e/versions.env only. Binaries go to a cache outside the repository,
  ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/<versions>/bin            (control plane, helm, kustomize)
  ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/operators_<versions>/bin  (operators, with --operators)
  ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/flux_<versions>/bin       (Flux controllers, with --flux)
  ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/argocd-<versions>/bin     (Argo CD and kustomize, with --argocd)
and are never committed. A binary already in the cache is reused as it is. The recipes are the table in
testbed/kfctl_testbed/gobuild/recipes.py.

Usage: e2e/build-binaries [--print-bin-dir] [--print-operators-dir] [--print-flux-dir] [--print-argocd-dir]
                          [--operators] [--flux] [--argocd] [--webapps] [--demo] [--tidy] [--force]
  --print-bin-dir        print the cache's bin directory and exit (builds nothing)
  --print-operators-dir  print the operators' bin directory and exit (builds nothing)
  --print-flux-dir       print the Flux controllers' bin directory and exit (builds nothing)
  --print-argocd-dir     print Argo CD's bin directory and exit (builds nothing)
  --operators            also build the Kubeflow operators (cold: about 11 min on 2 cores, + ~4 min for the others)
  --flux                 also build Flux's source-controller and kustomize-controller (cold: see e2e/README.md)
  --argocd               also build Argo CD (cold: see e2e/README.md)
  --webapps              also build the web UIs (see above; cold: see e2e/README.md)
  --demo                 the control plane and the demo's three operators only (see above)
  --tidy                 regenerate the wrapper modules' go.sum (go mod tidy) before building
  --force                rebuild binaries already in the cache
On success the last line on stdout is the bin directory (with --operators, the operators' bin
directory is the line before it; with --flux, the Flux bin directory comes before those, and with --argocd,
Argo CD's before all); progress goes to stderr. Exit codes: 1 a go command failed, 2 a bad argument or a
version out of step, 3 no Go toolchain.
"""

FLAGS = (
    "--print-bin-dir",
    "--print-operators-dir",
    "--print-flux-dir",
    "--print-argocd-dir",
    "--operators",
    "--flux",
    "--argocd",
    "--webapps",
    "--demo",
    "--tidy",
    "--force",
)


@dataclass(frozen=True)
class Args:
    flags: frozenset[str]
    help: bool = False

    def has(self, flag: str) -> bool:
        return flag in self.flags


def parse(argv: Sequence[str]) -> Args:
    """In order, as the script did: -h/--help wins over what follows it, an unknown argument over what follows it."""
    flags: set[str] = set()
    for arg in argv:
        if arg in ("-h", "--help"):
            return Args(frozenset(flags), help=True)
        if arg not in FLAGS:
            raise UsageError(f"unknown argument: {arg}")
        flags.add(arg)
    return Args(frozenset(flags))


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    versions: Versions | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    env = dict(os.environ) if environ is None else dict(environ)

    def log(message: str) -> None:
        print(f"[build-binaries {time.strftime('%H:%M:%S')}] {message}", file=err, flush=True)

    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        if args.help:
            print(HELP, end="", file=out)
            return 0
        pinned = versions or Versions.load(VERSIONS_FILE)
        selection = Selection(
            operators=args.has("--operators") or args.has("--demo"),
            flux=args.has("--flux"),
            demo=args.has("--demo"),
            argocd=args.has("--argocd"),
        )
        root = cachekeys.cache_root(env)
        # Each --print-* reads only the versions of its own set, so a default run never depends on the others'.
        for key in ("KUBERNETES_STAGING_VERSION", "KUSTOMIZE_VERSION", "HELM_VERSION"):
            pinned.get(key)
        if args.has("--print-bin-dir"):
            print(dirs(pinned, Selection(), root=root).bin, file=out)
            return 0
        if args.has("--print-operators-dir") or selection.operators:
            for r in in_groups("demo operators", "other operators"):
                pinned.get(r.version_key)
        if args.has("--print-operators-dir"):
            print(dirs(pinned, Selection(operators=True), root=root).operators, file=out)
            return 0
        if args.has("--print-flux-dir"):
            print(dirs(pinned, Selection(flux=True), root=root).flux, file=out)
            return 0
        if args.has("--print-argocd-dir"):
            print(dirs(pinned, Selection(argocd=True), root=root).argocd, file=out)
            return 0
        cache = dirs(pinned, selection, root=root)
        runner = Runner(pinned, Options(selection, tidy=args.has("--tidy"), force=args.has("--force")), cache, log, env)
        go_version = runner.go_version()  # no toolchain: exit 3 before the pin checks, as the script did
        pins.check_pins(selection, pinned)
        runner.run(go_version)
        if args.has("--webapps"):
            webapps.build(
                pinned,
                root=root,
                operators=dirs(pinned, Selection(operators=True), root=root).operators,
                fixtures=runner.fixtures,
                environ=env,
                log=log,
            )
    except BuildError as e:
        print(f"build-binaries: {e}", file=err, flush=True)
        return e.exit_code
    for d in cache.printed():
        print(d, file=out)
    return 0
