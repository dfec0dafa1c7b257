"""The value types a catalog parameter declares (``type:`` in component.yaml, overlay.yaml and platform.yaml),
and the check of a KfDef value against its parameter.

Pure: a value and a ParameterSpec in, the typed value or a Mismatch out. It knows no files and no positions:
the KfDef loader and `kfctl migrate` put the place in front of the message. It must not import kfctl.config
or anything above it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

from kfctl import quantity
from kfctl.catalog.model import SECRET_NAME, ParameterSpec, ParamType

TYPE_NAMES: tuple[str, ...] = get_args(ParamType)
# Longer text is none of the forms below (an image reference is at most 255 + 128 + 71 characters); checked
# first, so that no regular expression ever runs over a megabyte a KfDef may hold.
MAX_TEXT = 512


@dataclass(frozen=True)
class Mismatch:
    """Why a value is not of its parameter's type, as the end of a message: "must be {expected}; got {got}".
    ``choices``: an enum's values, from which the loader suggests the nearest."""

    expected: str
    got: str
    choices: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"must be {self.expected}; got {self.got}"


@dataclass(frozen=True)
class TextForm:
    """A type whose values are text of one form."""

    expected: str  # the words after "must be"
    example: str  # a valid value, for a parameter that has neither an example nor a default
    valid: Callable[[str], bool]


# The grammar of github.com/distribution/reference (what the kubelet and containerd parse).
_DOMAIN_PART = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_HOST}/)?{_PATH_PART}(?:/{_PATH_PART})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
# Pinned: with a tag or a digest. Without either the kubelet pulls `latest`, which the catalog never uses.
_IMAGE = re.compile(rf"{_NAME}(?::{_TAG}(?:@{_DIGEST})?|@{_DIGEST})")
_REGISTRY = re.compile(rf"{_HOST}(?:/{_PATH_PART})*/?")
# Go's time.ParseDuration (the flags of cluster-autoscaler), without a sign: none of these may be negative.
_DURATION = re.compile(r"0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+")
# arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE (IAM's region is empty; S3's account is too).
_ARN = re.compile(r"arn:aws(?:-[a-z]+)*:[a-z0-9-]+:[a-z0-9-]*:(?:[0-9]{12})?:\S+")


def _registry(text: str) -> bool:
    """A host (a name with a "." or a port, or localhost, as the container runtime tells a host from a Docker
    Hub user) and an optional path prefix."""
    host = text.split("/", 1)[0]
    return bool(_REGISTRY.fullmatch(text)) and ("." in host or ":" in host or host == "localhost")


def _quantity(text: str) -> bool:
    parsed = quantity.parse(text) if text == text.strip() else None
    return parsed is not None and parsed >= 0


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: pattern.fullmatch(text) is not None


TEXT_FORMS: dict[str, TextForm] = {
    "quantity": TextForm("a Kubernetes quantity (a number and an optional unit such as m, Mi or Gi)", "1Gi", _quantity),
    "duration": TextForm("a duration (numbers with units h, m, s or ms, such as 1h30m)", "10m", _matches(_DURATION)),
    "image": TextForm(
        "an image reference with a tag or a digest (REGISTRY/REPOSITORY:TAG or REPOSITORY@sha256:DIGEST)",
        "registry.example.com/team/app:v1.0",
        _matches(_IMAGE),
    ),
    "image-tag": TextForm(
        "an image tag (letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-')",
        "v1.0.0",
        _matches(re.compile(_TAG)),
    ),
    "registry": TextForm(
        "a registry host (with a '.' or a :port, or localhost) and an optional /path, without a scheme",
        "registry.example.com:5000/mirror",
        _registry,
    ),
    "dns-subdomain": TextForm(
        "a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253)",
        "my-name",
        _matches(SECRET_NAME),
    ),
    "arn": TextForm(
        "an AWS ARN (arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE)",
        "arn:aws:iam::123456789012:role/my-role",
        _matches(_ARN),
    ),
}


def check(spec: ParameterSpec, value: Any, *, text: str | None = None) -> tuple[Any, Mismatch | None]:
    """``value`` as ``spec``'s type, or what is wrong with it.

    A KfDef value may be a string that spells an integer or a boolean (values are often quoted). ``text`` is
    the source of a plain scalar YAML did not read as a string: a text type takes it as written (``1.10``
    stays "1.10", ``yes`` stays "yes").
    """
    if spec.type == "integer":
        number = _integer(value)
        if number is None or not _within(spec, number):
            return value, Mismatch(expected(spec), shown(value, text))
        return number, None
    if spec.type == "boolean":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true", None
        return value, Mismatch(expected(spec), shown(value, text))
    written = _as_text(value, text)
    if written is None or not _valid_text(spec, written):
        return value, Mismatch(expected(spec), shown(value, text), spec.values if spec.type == "enum" else ())
    return written, None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    return None


def _within(spec: ParameterSpec, number: int) -> bool:
    return (spec.minimum is None or number >= spec.minimum) and (spec.maximum is None or number <= spec.maximum)


def _as_text(value: Any, text: str | None) -> str | None:
    """A scalar as the text the KfDef holds; None for a mapping, a list, null, or a boolean given in code."""
    if text is not None and isinstance(value, int | float):  # a bool is an int
        return text
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _valid_text(spec: ParameterSpec, text: str) -> bool:
    if text == "" and (spec.empty_means or (spec.type == "string" and not spec.pattern)):
        return True
    if spec.type == "enum":
        return text in spec.values
    if spec.type == "string":
        return not spec.pattern or (len(text) <= MAX_TEXT and re.fullmatch(spec.pattern, text) is not None)
    return len(text) <= MAX_TEXT and TEXT_FORMS[spec.type].valid(text)


def expected(spec: ParameterSpec) -> str:
    """What a value of ``spec`` must be, with a valid example: the words after "must be"."""
    if spec.type == "boolean":
        return "true or false"
    if spec.type == "enum":
        return f"one of {', '.join(spec.values)}"
    if spec.type == "integer":
        words = "an integer"
        if spec.minimum is not None and spec.maximum is not None:
            words += f" from {spec.minimum} to {spec.maximum}"
        elif spec.minimum is not None:
            words += f" ≥ {spec.minimum}"
        elif spec.maximum is not None:
            words += f" ≤ {spec.maximum}"
    elif spec.type == "string":
        words = f"text matching {spec.pattern}" if spec.pattern else "a string"
    else:
        words = TEXT_FORMS[spec.type].expected
    example = example_of(spec)
    words += f", e.g. {json.dumps(example)}" if example is not None else ""
    return words + (f', or "" for {spec.empty_means}' if spec.empty_means else "")


def example_of(spec: ParameterSpec) -> Any:
    """A valid value of ``spec`` to show: its example, else its default (unless empty), else its type's."""
    if spec.example:
        return int(spec.example) if spec.type == "integer" else spec.example
    if spec.default not in (None, "") and not isinstance(spec.default, bool):
        return spec.default
    if spec.type == "integer":
        return spec.minimum if spec.minimum is not None else 1
    return TEXT_FORMS[spec.type].example if spec.type in TEXT_FORMS else None


def shown(value: Any, text: str | None = None) -> str:
    """A value as a message shows it: text quoted (and cut), scalars as the KfDef wrote them, containers by kind."""
    if text is not None and not isinstance(value, str):
        return text if len(text) <= 80 else text[:79] + "…"
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 80 else value[:79] + "…", ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return {dict: "a mapping", list: "a list", type(None): "nothing (null)"}.get(type(value), type(value).__name__)
