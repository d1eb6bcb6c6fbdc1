"""The read function over HTTP shapes: GET /flags, GET /flags/{name}, ETag / 304, errors, never a 5xx."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from botocore.stub import Stubber

from singleton_flags_service.vocabulary import CACHED, DEFAULT, STALE, STATIC
from tests.support.unit import START, ReadApi, body_of, expire, headers_of, warnings_in

FLAG_BODY_KEYS = {"flags", "version", "reason", "fetched_at", "maintenance"}


class TestGetFlags:
    def test_200_with_every_flag_version_reason_and_fetch_time(
        self, read_api: ReadApi, put_flags: Any, declarations: Any
    ) -> None:
        # Given a seeded item at version 7 with signup switched off
        put_flags(version=7, signup_enabled=False)
        # When GET /flags
        response = read_api.get()
        # Then 200 JSON with exactly the documented keys
        assert response["statusCode"] == 200
        assert headers_of(response)["Content-Type"] == "application/json"
        body = body_of(response)
        assert set(body) == FLAG_BODY_KEYS
        assert body["flags"] == {**declarations.initials(), "signup_enabled": False}
        assert (body["version"], body["reason"]) == (7, STATIC)
        assert datetime.fromisoformat(body["fetched_at"]).timestamp() == START

    def test_etag_is_the_quoted_version_and_clients_must_revalidate(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=7)
        headers = headers_of(read_api.get())
        assert headers["ETag"] == '"7"'
        assert headers["Cache-Control"] == "no-cache"

    def test_the_second_read_is_cached(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=2)
        read_api.get()
        body = body_of(read_api.get())
        assert (body["reason"], body["version"]) == (CACHED, 2)
        assert read_api.provider.fetches == 1

    @pytest.mark.parametrize(
        ("if_none_match", "status"),
        [
            pytest.param('"7"', 304, id="exact"),
            pytest.param('"3", "7"', 304, id="list"),
            pytest.param('"3","7"', 304, id="list-no-space"),
            pytest.param('W/"7"', 304, id="weak"),
            pytest.param('W/"1", W/"7"', 304, id="weak-list"),
            pytest.param("*", 304, id="wildcard"),
            pytest.param('"6"', 200, id="older"),
            pytest.param('"77"', 200, id="prefix-of-another"),
            pytest.param('W/"8"', 200, id="weak-other"),
            pytest.param('""', 200, id="empty-tag"),
            pytest.param("7", 200, id="unquoted"),
            pytest.param("garbage", 200, id="garbage"),
        ],
    )
    def test_if_none_match(self, read_api: ReadApi, put_flags: Any, if_none_match: str, status: int) -> None:
        # Given version 7
        put_flags(version=7)
        # When a client revalidates with what it holds
        response = read_api.get(headers={"If-None-Match": if_none_match})
        # Then 304 without a body when it holds version 7, else 200 with the body; the ETag either way
        assert response["statusCode"] == status
        assert headers_of(response)["ETag"] == '"7"'
        if status == 304:
            assert not response.get("body")
        else:
            assert body_of(response)["version"] == 7

    def test_the_header_name_is_case_insensitive(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=7)
        assert read_api.get(headers={"if-none-match": '"7"'})["statusCode"] == 304

    def test_an_event_without_headers_is_answered(self, read_api: ReadApi, put_flags: Any, make_event: Any) -> None:
        # Given an event with null headers (API Gateway's console test sends these)
        put_flags(version=7)
        event = make_event("GET", "/flags")
        event["headers"] = event["multiValueHeaders"] = None
        # Then 200
        assert read_api.module.handler(event, read_api.context)["statusCode"] == 200

    def test_fallbacks_carry_no_etag_and_are_not_cacheable(
        self, read_api: ReadApi, ddb: Any, declarations: Any
    ) -> None:
        # Given an empty table (the item is missing)
        # When GET /flags, even with a wildcard If-None-Match
        response = read_api.get(headers={"If-None-Match": "*"})
        # Then 200 with the fallbacks, reason DEFAULT, no version and no ETag
        assert response["statusCode"] == 200
        body = body_of(response)
        assert body["flags"] == declarations.fallbacks()
        assert (body["reason"], body["version"]) == (DEFAULT, None)
        assert "ETag" not in headers_of(response)
        assert headers_of(response)["Cache-Control"] == "no-store"

    def test_a_window_ended_by_its_deadline_is_served_off_without_etag(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given maintenance switched on by window w1, whose deadline has passed
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(START) - 1)},
        )
        # When GET /flags with the stored version's ETag
        response = read_api.get(headers={"If-None-Match": '"9"'})
        # Then 200 (the served value is not version 9's), maintenance off, and why
        assert response["statusCode"] == 200
        body = body_of(response)
        assert body["flags"]["maintenance_mode"] is False
        assert body["maintenance_ended_by"] == "deadline"
        assert "ETag" not in headers_of(response)

    def test_maintenance_held_by_a_window_names_it_and_its_deadline(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given maintenance switched on by window w1, whose deadline is an hour away
        deadline = int(START) + 3600
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(deadline)},
        )
        # When GET /flags
        body = body_of(read_api.get())
        # Then the maintenance object says a window holds it, which one, and until when (UTC)
        maintenance = body["maintenance"]
        assert maintenance == {"on": True, "held_by": "window", "window": "w1", "deadline": maintenance["deadline"]}
        moment = datetime.fromisoformat(maintenance["deadline"])
        assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0
        assert moment.timestamp() == deadline
        assert maintenance["on"] is body["flags"]["maintenance_mode"]

    def test_a_window_holding_without_a_stored_deadline_has_no_deadline(
        self, read_api: ReadApi, put_flags: Any
    ) -> None:
        put_flags(version=4, maintenance_mode=True, maintenance_owner={"S": "w1"})
        assert body_of(read_api.get())["maintenance"] == {
            "on": True,
            "held_by": "window",
            "window": "w1",
            "deadline": None,
        }

    def test_maintenance_switched_on_by_hand_is_manual(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given maintenance on with no owning window
        put_flags(version=3, maintenance_mode=True)
        # When GET /flags / Then held by hand, no window, no deadline
        assert body_of(read_api.get())["maintenance"] == {
            "on": True,
            "held_by": "manual",
            "window": None,
            "deadline": None,
        }

    def test_maintenance_off_is_held_by_nobody(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=3, maintenance_mode=False)
        assert body_of(read_api.get())["maintenance"] == {
            "on": False,
            "held_by": None,
            "window": None,
            "deadline": None,
        }

    def test_a_window_past_its_deadline_holds_nothing(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given window w1's hold, its deadline passed (its end never came)
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(START) - 1)},
        )
        # When GET /flags / Then maintenance is off and held by nobody: the effective value, not the stored one
        body = body_of(read_api.get())
        assert body["maintenance"] == {"on": False, "held_by": None, "window": None, "deadline": None}
        assert body["flags"]["maintenance_mode"] is False

    def test_a_cached_read_sees_the_deadline_pass(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given window w1 holding maintenance for 10 more seconds, read once (cached from then on)
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(START) + 10)},
        )
        assert body_of(read_api.get())["maintenance"]["held_by"] == "window"
        # When the deadline passes within the cache age / Then the cached answer reports it off, held by nobody
        read_api.clock.advance(11)
        body = body_of(read_api.get())
        assert body["reason"] == CACHED
        assert body["maintenance"] == {"on": False, "held_by": None, "window": None, "deadline": None}

    def test_fallbacks_report_maintenance_on_without_a_window(self, read_api: ReadApi, ddb: Any) -> None:
        # Given an empty table: the fallbacks, maintenance ON (fail closed)
        body = body_of(read_api.get())
        # Then the maintenance object agrees with the flag: on, not held by a window
        assert body["reason"] == DEFAULT
        assert body["maintenance"] == {"on": True, "held_by": "manual", "window": None, "deadline": None}

    def test_a_stale_value_keeps_its_version(self, read_api: ReadApi, put_flags: Any, ddb: Any) -> None:
        # Given a good read, an expired cache, and DynamoDB then throttling
        put_flags(version=4)
        read_api.get()
        expire(read_api.provider)
        with Stubber(ddb) as stubber:
            stubber.add_client_error("get_item", service_error_code="ProvisionedThroughputExceededException")
            read_api.clock.advance(10)
            response = read_api.get()
        # Then 200 with the last good version, reason STALE
        assert response["statusCode"] == 200
        assert (body_of(response)["reason"], body_of(response)["version"]) == (STALE, 4)
        assert headers_of(response)["ETag"] == '"4"'


class TestGetOneFlag:
    def test_200_with_name_value_version_reason(self, read_api: ReadApi, put_flags: Any) -> None:
        # Given a seeded item
        put_flags(version=3, api_rate_limit_per_minute=1200)
        # When GET /flags/{name}
        response = read_api.get(
            "/flags/api_rate_limit_per_minute",
            resource="/flags/{name}",
            path_parameters={"name": "api_rate_limit_per_minute"},
        )
        # Then 200 with that flag's value, the version and the reason
        assert response["statusCode"] == 200
        body = body_of(response)
        assert {"name", "value", "version", "reason"} <= set(body)
        assert (body["name"], body["value"], body["version"], body["reason"]) == (
            "api_rate_limit_per_minute",
            1200,
            3,
            STATIC,
        )
        assert headers_of(response)["ETag"] == '"3"'

    def test_304_when_the_client_holds_this_version(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=3)
        response = read_api.get("/flags/signup_enabled", resource="/flags/{name}", headers={"If-None-Match": '"3"'})
        assert response["statusCode"] == 304

    @pytest.mark.parametrize("name", ["no_such_flag", "history", "schema_version", "PK", "%20", 'a"b', "a\\b", "a`b"])
    def test_an_unknown_name_is_a_404_json_error(self, read_api: ReadApi, put_flags: Any, name: str) -> None:
        # Given a seeded item
        put_flags()
        # When GET /flags/{an undeclared name}
        response = read_api.get(f"/flags/{name}", resource="/flags/{name}", path_parameters={"name": name})
        # Then 404 with the contract's error shape, and DynamoDB was not called
        assert response["statusCode"] == 404
        assert headers_of(response)["Content-Type"] == "application/json"
        error = body_of(response)["error"]
        assert error["code"] == "FLAG_NOT_FOUND" and name in error["message"]
        assert read_api.provider.fetches == 0

    def test_a_flag_that_fell_back_is_default_while_the_others_are_static(
        self, read_api: ReadApi, put_flags: Any
    ) -> None:
        # Given version 6 of the item without maintenance_mode (a hand edit), the other flags intact
        put_flags(version=6, maintenance_mode=None)

        def one(name: str) -> dict[str, Any]:
            return body_of(read_api.get(f"/flags/{name}", resource="/flags/{name}", path_parameters={"name": name}))

        # When GET /flags/maintenance_mode and GET /flags/signup_enabled
        maintenance, signup = one("maintenance_mode"), one("signup_enabled")
        # Then maintenance_mode is its fallback (ON) with reason DEFAULT, of the version read; signup_enabled CACHED
        assert (maintenance["value"], maintenance["reason"], maintenance["version"]) == (True, DEFAULT, 6)
        assert (signup["value"], signup["reason"], signup["version"]) == (True, CACHED, 6)

    def test_every_flag_names_the_flags_that_fell_back_while_the_others_are_read(
        self, read_api: ReadApi, put_flags: Any
    ) -> None:
        # Given version 6 of the item without maintenance_mode (a hand edit), the other flags intact
        put_flags(version=6, maintenance_mode=None)
        # When GET /flags
        body = body_of(read_api.get("/flags", resource="/flags"))
        # Then maintenance_mode is served as its fallback and named as such; the read's reason is the others'
        assert (body["flags"]["maintenance_mode"], body["version"]) == (True, 6)
        assert body["reason"] != DEFAULT
        assert body["fallen_back"] == ["maintenance_mode"]

    def test_every_flag_of_an_intact_item_names_no_fallback(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=6)
        assert "fallen_back" not in body_of(read_api.get("/flags", resource="/flags"))

    def test_fallback_value_when_the_item_is_missing(self, read_api: ReadApi, ddb: Any) -> None:
        response = read_api.get("/flags/maintenance_mode", resource="/flags/{name}")
        body = body_of(response)
        assert response["statusCode"] == 200
        assert (body["value"], body["reason"], body["version"]) == (True, DEFAULT, None)
        assert "ETag" not in headers_of(response)


class TestNoRoute:
    @pytest.mark.parametrize(("method", "allowed"), [("DELETE", "GET, PATCH"), ("PUT", "GET, PATCH")])
    def test_another_method_on_flags_is_405_with_allow(
        self, read_api: ReadApi, ddb: Any, method: str, allowed: str
    ) -> None:
        response = read_api(method, "/flags")
        assert response["statusCode"] == 405
        assert headers_of(response)["Allow"] == allowed
        assert body_of(response)["error"]["code"] == "METHOD_NOT_ALLOWED"

    def test_delete_on_a_flag_is_405_with_allow(self, read_api: ReadApi, ddb: Any) -> None:
        response = read_api("DELETE", "/flags/signup_enabled", resource="/flags/{name}")
        assert response["statusCode"] == 405
        assert headers_of(response)["Allow"] == "GET"

    @pytest.mark.parametrize("path", ["/", "/nope", "/flags/a/b", "/flagsx"])
    def test_an_unknown_path_is_404_json(self, read_api: ReadApi, ddb: Any, path: str) -> None:
        response = read_api.get(path)
        assert response["statusCode"] == 404
        assert body_of(response)["error"]["code"] == "NOT_FOUND"


class TestNeverA5xx:
    @pytest.mark.parametrize(
        ("code", "status"),
        [
            ("ProvisionedThroughputExceededException", 400),
            ("AccessDeniedException", 400),
            ("ResourceNotFoundException", 400),
            ("InternalServerError", 500),
            ("ServiceUnavailable", 503),
        ],
    )
    def test_dynamodb_errors_answer_200_with_fallbacks(
        self, read_api: ReadApi, ddb: Any, declarations: Any, code: str, status: int
    ) -> None:
        # Given DynamoDB failing on a cold environment
        with Stubber(ddb) as stubber:
            stubber.add_client_error("get_item", service_error_code=code, http_status_code=status)
            # When GET /flags and GET /flags/{name}
            collection = read_api.get()
            one = read_api.get("/flags/maintenance_mode", resource="/flags/{name}")  # within the back-off
        # Then 200 with fail-closed fallbacks
        assert (collection["statusCode"], one["statusCode"]) == (200, 200)
        assert body_of(collection)["flags"] == declarations.fallbacks()
        assert body_of(one)["value"] is True

    def test_an_unexpected_client_exception_answers_200(self, read_api: ReadApi, ddb: Any) -> None:
        def explode(**_: Any) -> None:
            raise RuntimeError("boom")

        ddb.meta.events.register("before-call.dynamodb.GetItem", explode)
        response = read_api.get()
        assert response["statusCode"] == 200
        assert body_of(response)["reason"] == DEFAULT


def test_a_degraded_read_logs_with_the_api_gateway_correlation_id(
    read_api: ReadApi, ddb: Any, stdout: Any, make_event: Any
) -> None:
    # Given an empty table
    # When GET /flags
    read_api.get()
    # Then the warning carries the request id of API Gateway as correlation id
    (warning,) = warnings_in(stdout.records())
    assert warning["correlation_id"] == make_event("GET", "/flags")["requestContext"]["requestId"]
    assert warning["function_request_id"] == read_api.context.aws_request_id
