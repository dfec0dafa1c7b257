"""What no file kfctl generates may hold (issue 18): a Secret with values, or a credential the catalog once
shipped to every install. Shared by the catalog's render tests and the export test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kfctl import yamlio

# The fixed credentials of kfctl's catalog before it generated them: found anywhere, they came back.
PLACEHOLDERS = (
    "kfp-default-mysql-password-change-me",
    "kfp-default-access-key",
    "kfp-default-secret-key-change-me",
    "katib-default-mysql-password-change-me",
    "change-me",
)


SECRET_KIND = re.compile(r"\bkind:\s*[\"']?Secret\b")


def secret_values_in(doc: Any) -> list[str]:
    """The keys a Secret document carries values for ([] for any other document)."""
    if not isinstance(doc, dict) or doc.get("kind") != "Secret":
        return []
    return sorted({*(doc.get("data") or {}), *(doc.get("stringData") or {})})


def credentials_in(directory: Path) -> list[str]:
    """One line per file under ``directory`` that holds a placeholder or a Secret with values."""
    problems = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        rel = path.relative_to(directory)
        text = path.read_text(encoding="utf-8", errors="replace")
        problems += [f"{rel}: holds {p!r}" for p in PLACEHOLDERS if p in text]
        if path.suffix in (".yaml", ".yml") and SECRET_KIND.search(text):  # parse only what may hold one
            for doc in yamlio.safe_load_all(text):
                keys = secret_values_in(doc)
                if keys:
                    problems.append(f"{rel}: Secret {doc['metadata'].get('name')} carries values for {', '.join(keys)}")
    return problems
