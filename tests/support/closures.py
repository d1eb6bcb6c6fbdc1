"""What importing a module loads: a fresh interpreter (a subprocess, outside the checkout: only the installed
packages importable) runs one import statement and lists the modules it added to ``sys.modules``.

Listed: each of the project's modules, by its dotted name; each third-party distribution's top-level name; apart,
the standard library's top-level names (they vary with the Python version). Left out: what the interpreter loaded
before the statement ran, and an empty namespace package none of whose modules was loaded (an optional import that
found nothing in it: urllib3's ``from backports import zstd`` loads ``backports`` wherever another distribution
installed ``backports.tarfile``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OWN_ROOTS = frozenset(
    {"singleton_flags", "singleton_flags_cdk", "singleton_flags_service", "singleton_flags_infra", "flagctl"}
)
_SCRIPT = """
import json, sys
before = set(sys.modules)
exec(compile(STATEMENT, "<import>", "exec"))
files = {name: getattr(sys.modules[name], "__file__", None) for name in set(sys.modules) - before}
# True for an empty namespace: a package's __init__ defining no name of its own (pkgutil's extend_path idiom)
loaded = {
    name: file.rsplit("/", 1)[-1].startswith("__init__.")
    and not [key for key in vars(sys.modules[name]) if not key.startswith("__")]
    for name, file in files.items() if file
}
print(json.dumps({"loaded": loaded, "names": sorted(files), "stdlib": sorted(sys.stdlib_module_names)}))
"""


@dataclass(frozen=True)
class Closure:
    own: frozenset[str]  # the project's modules, dotted
    third_party: frozenset[str]  # top-level names outside the standard library and the project
    stdlib: frozenset[str]  # the standard library's top-level names


def import_closure(statement: str, cwd: Path, env: Mapping[str, str] | None = None) -> Closure:
    """The modules ``statement`` loads in a new interpreter started in ``cwd`` (a directory outside the checkout)."""
    out = subprocess.run(
        [sys.executable, "-c", f"STATEMENT = {statement!r}\n{_SCRIPT}"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(out.stdout)
    stdlib = set(found["stdlib"])
    tops = {name.split(".")[0] for name, empty in found["loaded"].items() if "." in name or not empty}
    return Closure(
        own=frozenset(name for name in found["loaded"] if name.split(".")[0] in OWN_ROOTS),
        third_party=frozenset(top for top in tops if top not in stdlib and top not in OWN_ROOTS),
        stdlib=frozenset(name.split(".")[0] for name in found["names"]) & stdlib,
    )
