"""B5: `kfctl generate` of the full catalog vs `kustomize build` of the same directories one after another.

Both sides run in this one process's run, alternating (peer first on odd runs, kfctl first on even
ones), on the same machine state:
- peer: the generated APPDIR/kustomize/<app> directories built by the kustomize binary, sequentially
  (what a user would script without kfctl);
- kfctl cold: `kfctl generate APPDIR` as a subprocess with its render cache (APPDIR/.cache/render) removed
  first (parse, validate, vendor, parallel render, atomic swap);
- kfctl after a one-parameter change: notebook-controller's `useIstio` flipped in the KfDef, then
  `kfctl generate APPDIR` with the cache the previous generate left (one application is built).

    .venv/bin/python bench/bench_generate.py [--runs 5] [--platform generic]

Prints median/min/max wall seconds per side and the ratio kfctl/peer (lower is better).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from benchlib import full_catalog_app

from kfctl.render.kustomize import find_kustomize


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


CHANGED_APP = "notebook-controller"
CHANGED_PARAMETER = "useIstio"


@dataclass
class GenerateFigures:
    applications: int = 0
    kustomize: str = ""
    peer: list[float] = field(default_factory=list)
    ours: list[float] = field(default_factory=list)  # cold: no render cache
    one_change: list[float] = field(default_factory=list)  # one parameter changed, the cache warm


def set_parameter(kfdef: Path, value: bool) -> None:
    """``CHANGED_PARAMETER`` of ``CHANGED_APP`` in the KfDef set to ``value``: a one-parameter change."""
    doc = yaml.safe_load(kfdef.read_text())
    for app in doc["spec"]["applications"]:
        if app["name"] == CHANGED_APP:
            app["kustomizeConfig"]["parameters"] = [{"name": CHANGED_PARAMETER, "value": value}]
    kfdef.write_text(yaml.safe_dump(doc, sort_keys=False))


def measure(root: Path, *, runs: int, platform: str = "generic") -> GenerateFigures:
    """Alternating, one pair per run, in ``root`` (a scratch dir)."""
    kfctl = str(Path(sys.executable).parent / "kfctl")
    k = find_kustomize()
    app = root / "generate"
    full_catalog_app(app, platform=platform)
    subprocess.run([kfctl, "generate", str(app)], check=True, capture_output=True)  # warm-up, creates dirs
    dirs = sorted(d for d in (app / "kustomize").iterdir() if d.is_dir())
    figs = GenerateFigures(applications=len(dirs), kustomize=k.describe())
    for i in range(runs):

        def peer() -> None:
            start = time.perf_counter()
            for d in dirs:
                subprocess.run([*k.argv, str(d)], check=True, capture_output=True)
            figs.peer.append(time.perf_counter() - start)

        def ours(value: bool = i % 2 == 0) -> None:  # a different value from the previous run's
            shutil.rmtree(app / ".cache" / "render", ignore_errors=True)
            figs.ours.append(timed([kfctl, "generate", str(app)]))
            set_parameter(app / "kfdef.yaml", value)
            figs.one_change.append(timed([kfctl, "generate", str(app)]))

        for side in (peer, ours) if i % 2 == 0 else (ours, peer):
            side()
    return figs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--platform", default="generic")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kfctl-bench-") as tmp:
        figs = measure(Path(tmp), runs=args.runs, platform=args.platform)
    peer, ours = figs.peer, figs.ours
    print(
        f"B5 generate: {figs.applications} applications, platform {args.platform}, {figs.kustomize}, {args.runs} runs"
    )
    print(f"{'side':<34}{'median s':>10}{'min s':>9}{'max s':>9}")
    sides = (
        ("kustomize build, one after another", peer),
        ("kfctl generate, cold", ours),
        ("kfctl generate, one parameter", figs.one_change),
    )
    for name, xs in sides:
        print(f"{name:<34}{statistics.median(xs):>10.2f}{min(xs):>9.2f}{max(xs):>9.2f}")
    print(f"ratio cold/peer (median): {statistics.median(ours) / statistics.median(peer):.2f}x")
    print(f"ratio one parameter/peer (median): {statistics.median(figs.one_change) / statistics.median(peer):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
