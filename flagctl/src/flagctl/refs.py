"""``flagctl refs PATH``: which flag names a source tree reads, against the declarations.

What counts as a reference (a flag name given as a string literal):
- Python, parsed with ``ast``: the embedded client's typed reads (``.get_bool("name")``, ``get_int``, ``get_float``,
  ``get_str``) and the OpenFeature provider's (``.get_boolean_value("name", ...)``, ``get_string_value``,
  ``get_integer_value``, ``get_float_value``, ``get_object_value`` and their ``_details`` forms) on any receiver;
  ``.get("name")`` and ``.details("name")`` only on a receiver whose name says flags (``FLAGS.get``,
  ``self.flags.details``; a ``dict.get`` elsewhere is not a flag read);
- JavaScript, TypeScript, Go, Java and Kotlin, by the regular expression ``OPENFEATURE_CALL``: the OpenFeature
  SDKs' evaluation methods (``getBooleanValue``, ``getNumberDetails``, Go's ``BooleanValue(ctx, "name", ...)``,
  Java's ``getIntegerValue``...) with the name as their first string argument (Go: after the context);
- every scanned file, Python included: an OFREP path with the name in it (``/ofrep/v1/evaluate/flags/name``,
  ``OFREP_PATH``).
A name built at run time (a variable, an f-string) is not seen: refs is a lower bound of what code reads.

The answer: names used in code that no declaration names (``undeclared``), declared flags no scanned file names
(``unreferenced``: "not referenced in the scanned paths", never a proposal to remove them), and references to
flags declared ``removed``. Code and declarations agree when the first and the last are empty and every flag not
removed is referenced.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flagctl.client import FlagsClient
from flagctl.errors import BAD_INPUT, SERVER, FlagctlError
from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags.errors import DeclarationError

FLAG_NAME = r"[a-z][a-z0-9_]{0,62}"
_OPENFEATURE_KINDS = ("boolean", "string", "integer", "float", "object")
# Read methods whose first argument names a flag, on any receiver (the embedded client's typed reads, the
# OpenFeature Python SDK's evaluations).
PYTHON_TYPED_READS = frozenset(
    {
        "get_bool",
        "get_int",
        "get_float",
        "get_str",
        *(f"get_{kind}_{form}" for kind in _OPENFEATURE_KINDS for form in ("value", "details")),
    }
)
# Read methods counted only on a receiver whose name says flags (``flags.get``): ``get`` is every mapping's.
PYTHON_GENERIC_READS = frozenset({"get", "details"})
OFREP_PATH = re.compile(r"/ofrep/v1/evaluate/flags/(" + FLAG_NAME + r")\b")
# The OpenFeature SDKs' evaluation methods: JS/TS (getBooleanValue, getNumberDetails...), Java/Kotlin
# (getIntegerValue, getDoubleDetails...), Go (BooleanValue(ctx, "name", ...), FloatValueDetails...).
OPENFEATURE_CALL = re.compile(
    r"\b(?:get)?(?:Boolean|String|Number|Integer|Int|Double|Float|Object)(?:Value|Details|ValueDetails)\s*\(\s*"
    r"(?:[A-Za-z_][\w.]*\s*,\s*)?"  # Go's context argument
    r"[\"'`](" + FLAG_NAME + r")[\"'`]"
)
OTHER_LANGUAGES = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".java", ".kt"})
SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", "dist", "build"}
)
MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class DeclaredFlag:
    """What refs and report need of a declaration: its name and lifecycle."""

    name: str
    state: str = "active"
    permanent: bool = False
    owner: str | None = None
    deprecated_on: str | None = None
    note: str | None = None

    def as_doc(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "permanent": self.permanent,
            "owner": self.owner,
            "deprecated_on": self.deprecated_on,
            "note": self.note,
        }


def from_declarations(declarations: Declarations) -> list[DeclaredFlag]:
    return [
        DeclaredFlag(
            name,
            spec.state,
            spec.is_permanent,
            spec.owner or None,
            spec.deprecated_on,
            spec.note or None,
        )
        for name, spec in declarations.items()
    ]


def from_documents(body: Any) -> list[DeclaredFlag]:
    """The declarations as GET /flags/declarations answers them (``{"declarations": [{"name", "state", ...}]}``)."""
    documents = body.get("declarations") if isinstance(body, Mapping) else None
    if not isinstance(documents, list) or not all(
        isinstance(doc, Mapping) and isinstance(doc.get("name"), str) for doc in documents
    ):
        raise FlagctlError("GET /flags/declarations answered no list of declarations", SERVER, "BAD_ANSWER")

    def text(doc: Mapping[str, Any], key: str) -> str | None:
        value = doc.get(key)
        return value if isinstance(value, str) and value else None

    return [
        DeclaredFlag(
            doc["name"],
            text(doc, "state") or "active",
            doc.get("permanent") is True,
            text(doc, "owner"),
            text(doc, "deprecated_on"),
            text(doc, "note"),
        )
        for doc in documents
    ]


def declared_flags(path: Path | None, client: FlagsClient | None) -> list[DeclaredFlag]:
    """From ``--declarations FILE`` (checked as the service checks it), else the API's GET /flags/declarations."""
    if path is not None:
        try:
            return from_declarations(load_declarations(path))
        except DeclarationError as exc:
            raise FlagctlError(f"--declarations: {exc}", BAD_INPUT, "BAD_INPUT") from exc
    if client is None:
        raise FlagctlError("give --declarations FILE, or an API to read them from", BAD_INPUT, "USAGE")
    answer = client.request("GET", "/flags/declarations")
    if answer.status != 200:
        raise FlagctlError(
            f"GET /flags/declarations answered HTTP {answer.status}: give --declarations FILE instead, or check "
            "--url and your credentials",
            SERVER if answer.status >= 500 or answer.status == 429 else BAD_INPUT,
            "DECLARATIONS_UNAVAILABLE",
        )
    return from_documents(answer.body)


@dataclass(frozen=True, order=True)
class Reference:
    path: str
    line: int
    name: str
    how: str  # "client", "openfeature", "ofrep"

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Scan:
    references: list[Reference] = field(default_factory=list)
    files: int = 0
    skipped: list[str] = field(default_factory=list)  # files that could not be read or parsed, with why


def _says_flags(node: ast.expr) -> bool:
    """A receiver whose name says flags: ``flags``, ``FLAGS``, ``self.flags``, ``feature_flags``..."""
    if isinstance(node, ast.Name):
        return "flag" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "flag" in node.attr.lower()
    return False


def python_references(source: str, path: str) -> list[Reference]:
    """The flag reads of a Python module (raises SyntaxError or ValueError when it does not parse)."""
    found: list[Reference] = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        method, first = node.func.attr, node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        if method in PYTHON_TYPED_READS or (method in PYTHON_GENERIC_READS and _says_flags(node.func.value)):
            how = "openfeature" if method.endswith(("_value", "_details")) else "client"
            if re.fullmatch(FLAG_NAME, first.value):
                found.append(Reference(path, node.lineno, first.value, how))
    return found


def _pattern_references(source: str, path: str, pattern: re.Pattern[str], how: str) -> list[Reference]:
    return [
        Reference(path, source.count("\n", 0, match.start()) + 1, match.group(1), how)
        for match in pattern.finditer(source)
    ]


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES)
        for name in sorted(names):
            yield Path(directory, name)


def scan(roots: Iterable[Path]) -> Scan:
    """Every reference in the Python and other-language files under ``roots``."""
    result = Scan()
    for root in roots:
        if not root.exists():
            raise FlagctlError(f"no such file or directory: {root}", BAD_INPUT, "BAD_INPUT")
        for path in _files(root):
            suffix = path.suffix.lower()
            if suffix != ".py" and suffix not in OTHER_LANGUAGES:
                continue
            shown = str(path)
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    result.skipped.append(f"{shown}: larger than {MAX_FILE_BYTES} bytes")
                    continue
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                result.skipped.append(f"{shown}: {exc}")
                continue
            result.files += 1
            result.references += _pattern_references(source, shown, OFREP_PATH, "ofrep")
            if suffix == ".py":
                try:
                    result.references += python_references(source, shown)
                except (SyntaxError, ValueError) as exc:
                    result.skipped.append(f"{shown}: not parsed as Python ({exc}); only its OFREP paths were read")
            else:
                result.references += _pattern_references(source, shown, OPENFEATURE_CALL, "openfeature")
    result.references.sort()
    return result


def compare(declared: list[DeclaredFlag], found: Scan) -> dict[str, Any]:
    """The answer of ``flagctl refs``, as ``--json`` prints it."""
    by_name: dict[str, list[str]] = {}
    for reference in found.references:
        by_name.setdefault(reference.name, []).append(reference.where())
    states = {flag.name: flag.state for flag in declared}
    undeclared = {name: places for name, places in sorted(by_name.items()) if name not in states}
    removed = {name: places for name, places in sorted(by_name.items()) if states.get(name) == "removed"}
    unreferenced = [flag.name for flag in declared if flag.name not in by_name and flag.state != "removed"]
    deprecated = {name: places for name, places in sorted(by_name.items()) if states.get(name) == "deprecated"}
    return {
        "agree": not undeclared and not removed and not unreferenced,
        "files_scanned": found.files,
        "skipped": found.skipped,
        "referenced": {name: places for name, places in sorted(by_name.items()) if name in states},
        "undeclared": undeclared,
        "removed_but_referenced": removed,
        "deprecated_referenced": deprecated,
        "unreferenced": unreferenced,
    }


def render(answer: Mapping[str, Any]) -> str:
    lines = [f"scanned {answer['files_scanned']} file(s)"]
    for name, places in answer["undeclared"].items():
        lines.append(f"undeclared: {name} used at {', '.join(places)}")
    for name, places in answer["removed_but_referenced"].items():
        lines.append(f"declared removed, still used: {name} at {', '.join(places)}")
    for name, places in answer["deprecated_referenced"].items():
        lines.append(f"deprecated, still used: {name} at {', '.join(places)}")
    lines.extend(f"not referenced in the scanned paths: {name}" for name in answer["unreferenced"])
    lines.extend(f"skipped: {skipped}" for skipped in answer["skipped"])
    if answer["agree"]:
        lines.append(f"code and declarations agree ({len(answer['referenced'])} flag(s) referenced)")
    return "\n".join(lines)


def to_json(answer: Mapping[str, Any]) -> str:
    return json.dumps(answer, indent=2, ensure_ascii=False)
