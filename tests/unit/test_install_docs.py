"""No page tells anyone to install a distribution of this project by its bare name from a public index: the names
are not registered on PyPI, and whoever registers one would be installed (docs/install.md).

Every `pip install` in the docs, the READMEs and the examples that names one of the project's distributions names
it by path (a wheel or a project folder), by direct reference (``name @ git+https://...`` or ``@ file://...``),
or installs from one private index only (``--index-url``, never ``--extra-index-url``).
"""

from __future__ import annotations

import re

from tests.support.packaging import PROJECTS, ROOT

PAGES = sorted(
    {
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(folder / "README.md" for folder in PROJECTS.values()),
        *(ROOT / "examples").rglob("*.md"),
        *(ROOT / "examples").rglob("*.py"),
    }
)
# One of the project's distribution names as a requirement: not inside a path, a URL or a wheel's file name.
NAME = re.compile(
    r"(?<![\w./@-])(?P<name>" + "|".join(re.escape(name) for name in sorted(PROJECTS, key=len, reverse=True)) + r")"
    r"(?:\[[\w,\s-]*\])?(?![\w.-])(?P<reference>\s*@)?"
)
PIP_INSTALL = re.compile(r"pip3?\s+install\b[^\n`]*")


def pip_installs(text: str) -> list[str]:
    """Each `pip install` command of ``text``, its continuation lines joined."""
    return PIP_INSTALL.findall(re.sub(r"\\\n\s*", " ", text))


def unsafe(command: str) -> list[str]:
    """The project's distributions ``command`` would look up by name on an index that is not private only."""
    private_only = "--index-url" in command and "--extra-index-url" not in command
    return [
        match["name"]
        for match in NAME.finditer(command)
        if "--extra-index-url" in command or (not match["reference"] and not private_only)
    ]


def test_no_page_installs_a_distribution_of_the_project_by_name_from_a_public_index() -> None:
    # Given every page that shows an install: the READMEs, the docs and the examples
    # When each `pip install` naming a distribution of the project is read
    found = {
        f"{page.relative_to(ROOT)}: {command}": unsafe(command)
        for page in PAGES
        for command in pip_installs(page.read_text(encoding="utf-8"))
    }
    # Then each names it by path, by direct reference or on a private index only
    assert {command: names for command, names in found.items() if names} == {}
    # And the install page shows every way, for each of the distributions
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert all(f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl" in install for name in PROJECTS)
    assert "#subdirectory=client" in install and "#subdirectory=flagctl" in install
    assert "--index-url" in install and "upstream=BLOCK" in install


def test_the_rule_tells_a_bare_name_from_a_path_a_reference_and_a_private_index() -> None:
    assert unsafe("pip install singleton-flags") == ["singleton-flags"]
    assert unsafe("pip install 'singleton-flags[openfeature]'") == ["singleton-flags"]
    assert unsafe("pip install -U singleton-flags-cli==0.1.0") == ["singleton-flags-cli"]
    assert unsafe("pip install --extra-index-url https://private/simple/ singleton-flags") == ["singleton-flags"]
    assert unsafe("pip install './dist/singleton_flags-0.1.0-py3-none-any.whl[openfeature]'") == []
    assert unsafe("pip install '../../client[cdk]'") == []
    assert (
        unsafe('pip install "singleton-flags @ git+https://github.com/o/singleton-flags@v1#subdirectory=client"') == []
    )
    assert unsafe("pip install --index-url https://private/simple/ singleton-flags") == []
