"""Ship the catalog (manifests/, overlays/, platforms/) inside the package as kfctl/_catalog/.

The catalog lives at the repository's top level, where people and kustomize read it; an installed kfctl
finds the copy made here (kfctl.catalog.load.catalog_root looks for both).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
CATALOG_PARTS = ("manifests", "overlays", "platforms")


class BuildWithCatalog(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "kfctl" / "_catalog"
        shutil.rmtree(target, ignore_errors=True)
        for part in CATALOG_PARTS:
            # manifests/gen-crds regenerates CRDs in a checkout; an installed catalog has no use for it.
            shutil.copytree(ROOT / part, target / part, ignore=shutil.ignore_patterns("__pycache__", "gen-crds"))


setup(cmdclass={"build_py": BuildWithCatalog})
