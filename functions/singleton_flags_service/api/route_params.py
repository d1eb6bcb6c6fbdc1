"""What the write API's routes and routers share: the query parameters of the paginated GETs (history, guards,
scheduled changes), as documented.

Powertools validates and documents the parameters; the handlers read their values from the raw query
(``singleton_flags_service.api.requests.page_query``): once each, ``limit`` ASCII digits only.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query

Cursor = Annotated[str | None, Query(max_length=200, description="next_cursor of the previous page.")]


def limit_param(what: str, default: int, maximum: int) -> Any:
    """``limit: Annotated[str | None, limit_param(...)]``: what a page holds, its bounds and default."""
    return Query(
        description=f"{what} per page (1-{maximum}, default {default}).", json_schema_extra={"pattern": "^[0-9]{1,3}$"}
    )
