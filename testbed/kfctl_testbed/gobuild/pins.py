"""The pin checks: every wrapper module must require exactly the release versions.env names, or a cache key would
lie about what its binaries are. Run before any build; a failure names the go.mod, the line it lacks, and the
command that regenerates its go.sum once it is fixed.

Reads the wrappers' go.mod files, never writes them; runs nothing (the replace/exclude comparison with upstream's
go.mod needs go and the module cache, so `run` does it, when it builds).
"""

from __future__ import annotations

import re
from pathlib import Path

from kfctl_testbed.gobuild.errors import PinError
from kfctl_testbed.gobuild.recipes import Recipe, Selection, in_groups, releases
from kfctl_testbed.gobuild.versions import GOBUILD, Versions

_STAGING_REPLACE = re.compile(r"=> k8s\.io/[a-z0-9-]+ v")


def check_recipe(r: Recipe, versions: Versions, *, gobuild: Path = GOBUILD) -> None:
    """Each release of `r` (other releases included) against its wrapper's go.mod."""
    if r.source != "wrapper":
        return
    for build in releases(r, versions):
        go_mod = gobuild / build.wrapper / "go.mod"
        if not go_mod.is_file():
            raise PinError(
                f"no wrapper module {go_mod} for a version {versions.path} names: copy the pattern of a sibling "
                f"wrapper (go.mod, tools.go, an empty go.sum) and run e2e/build-binaries {r.tidy_flags}."
            )
        lines = go_mod.read_text().splitlines()
        for module in r.requires:
            expected = f"require {module} {build.version}"
            if expected not in lines:
                raise PinError(
                    f"{go_mod} does not match {versions.path}: expected the line '{expected}'.\n"
                    f"Edit the wrapper go.mod to the versions in versions.env and run e2e/build-binaries "
                    f"{r.tidy_flags}."
                )
        if r.staging_key:
            staging = versions.get(r.staging_key)
            for line in lines:
                if _STAGING_REPLACE.search(line) and not line.endswith(f" {staging}"):
                    raise PinError(
                        f"a staging replace in {go_mod} is not at {staging} ({r.staging_key} of {versions.path}): "
                        f"'{line.strip()}'"
                    )


def check_pins(selection: Selection, versions: Versions, *, gobuild: Path = GOBUILD) -> None:
    """The control plane's wrappers always; every operator's (all releases, even for --demo: a wrapper out of step
    is found before anyone relies on it) with --operators or --demo; Flux's with --flux, Argo CD's with --argocd."""
    recipes = list(in_groups("control plane"))
    if selection.operators or selection.demo:
        recipes += in_groups("demo operators", "other operators")
    if selection.flux:
        recipes += in_groups("flux")
    if selection.argocd:
        recipes += in_groups("argocd")
    for r in recipes:
        check_recipe(r, versions, gobuild=gobuild)
