"""``/docs`` of the local runner: Swagger UI when npm installed it, else a page saying how to get it and where
the OpenAPI document is (``make run`` alone installs no npm package)."""

from __future__ import annotations

import pytest

from local import web


def docs_page() -> str:
    answer = web.static_file("GET", "/docs")
    assert answer is not None and answer.status == 200
    return answer.body.decode()


def test_without_npm_docs_says_swagger_ui_is_missing_how_to_install_it_and_links_the_openapi_document(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    # Given: no node_modules/swagger-ui-dist
    monkeypatch.setattr(web, "SWAGGER_UI_DIR", tmp_path / "swagger-ui-dist")
    # When
    page = docs_page()
    # Then: no script that cannot load; the way forward instead
    assert "<script" not in page
    assert "Swagger UI is not installed" in page
    assert "<code>npm ci</code>" in page
    assert 'href="/openapi.json"' in page


def test_with_npm_docs_is_swagger_ui(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "swagger-ui-bundle.js").write_text("// bundle")
    monkeypatch.setattr(web, "SWAGGER_UI_DIR", tmp_path)
    page = docs_page()
    assert "swagger-ui-bundle.js" in page and "not installed" not in page
