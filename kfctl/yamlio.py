"""YAML in, safely and fast.

Loading uses libyaml's C safe loader when PyYAML was built with it (about ten times faster on the catalog and
on rendered bundles of hundreds of objects), else the pure-Python safe loader. Both construct only plain
YAML types; no loader that can build arbitrary Python objects is ever used. Dumping stays with the
pure-Python safe dumper so that generated files are byte-identical on every machine.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def safe_load_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=_LOADER))
