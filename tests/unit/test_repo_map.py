"""README.md's repository map is the tree's: one line per folder, generated from the folders themselves
(``tests.support.repo_map``), so a folder added, moved or redescribed shows in the map or fails here."""

from __future__ import annotations

from tests.support.repo_map import readme_map, rendered


def test_the_readme_map_is_generated_from_the_current_tree() -> None:
    # Given the tree as git sees it, its packages' docstrings and its distributions' pyprojects
    # When the map is generated
    expected = rendered()
    # Then README.md holds exactly that map (`python -m tests.support.repo_map --write` rewrites it)
    assert readme_map() == expected
