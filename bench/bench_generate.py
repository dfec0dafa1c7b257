"""B5: `kfctl generate` of the full catalog vs `kustomize build` of the same directories one after another.

Both sides run in this one process's run, alternating, on the same machine state:
- peer: the generated APPDIR/kustomize/<app> directories built by the kustomize binary, sequentially
  (what a user would script without kfctl);
- kfctl: `kfctl generate APPDIR` as a subprocess (parse, validate, vendor, parallel render, atomic swap).

    .venv/bin/python bench/bench_generate.py [--runs 5] [--platform generic]

Prints median/min/max wall seconds per side and the ratio kfctl/peer (lower is better).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kfctl.app.init import init_app
from kfctl.catalog.load import load_catalog
from kfctl.render.kustomize import find_kustomize

REPO = Path(__file__).resolve().parent.parent
PLATFORM_VALUES = {
    "clusterName": "bench",
    "region": "eu-west-1",
    "autoscalerRoleArn": "arn:aws:iam::1:role/ca",
    "project": "p",
    "zone": "z",
    "cluster": "c",
    "subscriptionId": "s",
    "resourceGroup": "rg",
}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--platform", default="generic")
    args = parser.parse_args()
    catalog = load_catalog()
    components = sorted(c.name for c in catalog.components.values() if not c.platforms or args.platform in c.platforms)
    kfctl = str(Path(sys.executable).parent / "kfctl")
    k = find_kustomize()
    with tempfile.TemporaryDirectory(prefix="kfctl-bench-") as tmp:
        app = Path(tmp) / "bench"
        init_app(catalog, app_dir=app, platform=args.platform, components=components, namespace="kubeflow", force=True)
        path = app / "kfdef.yaml"
        doc = yaml.safe_load(path.read_text())
        for plugin in doc["spec"].get("plugins", []):
            for key in plugin.get("spec", {}):
                plugin["spec"][key] = PLATFORM_VALUES.get(key, plugin["spec"][key])
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        subprocess.run([kfctl, "generate", str(app)], check=True, capture_output=True)  # warm-up, creates dirs
        dirs = sorted(d for d in (app / "kustomize").iterdir() if d.is_dir())
        ours: list[float] = []
        peer: list[float] = []
        for _ in range(args.runs):
            start = time.perf_counter()
            for d in dirs:
                subprocess.run([*k.argv, str(d)], check=True, capture_output=True)
            peer.append(time.perf_counter() - start)
            ours.append(timed([kfctl, "generate", str(app)]))
    print(f"B5 generate: {len(dirs)} applications, platform {args.platform}, {k.describe()}, {args.runs} runs")
    print(f"{'side':<34}{'median s':>10}{'min s':>9}{'max s':>9}")
    for name, xs in (("kustomize build, one after another", peer), ("kfctl generate", ours)):
        print(f"{name:<34}{statistics.median(xs):>10.2f}{min(xs):>9.2f}{max(xs):>9.2f}")
    print(f"ratio kfctl/peer (median): {statistics.median(ours) / statistics.median(peer):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
