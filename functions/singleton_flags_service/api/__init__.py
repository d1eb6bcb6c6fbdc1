"""The HTTP layer: the route table and every route, request rules, answers, OFREP and the OpenAPI document."""
