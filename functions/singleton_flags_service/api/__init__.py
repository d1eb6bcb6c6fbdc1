"""The HTTP layer: the route table, request rules, answers, OFREP and the OpenAPI document."""
