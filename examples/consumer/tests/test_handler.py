"""The signup route answers from two flags: maintenance first (503), then signups (403), else 201."""

import json

import handler  # creates its client at import: no AWS or SINGLETON_FLAGS variable is needed for that
import pytest


@pytest.fixture
def flags(singleton_flags, monkeypatch):
    monkeypatch.setattr(handler, "FLAGS", singleton_flags)
    return singleton_flags


def test_a_signup_goes_ahead_with_the_initial_values(flags):
    answer = handler.handler({}, None)
    assert answer["statusCode"] == 201
    assert json.loads(answer["body"])["signed_up"] is True


def test_maintenance_answers_503_with_retry_after_whatever_signups_say(flags):
    flags.set(maintenance_mode=True, signup_enabled=True)
    answer = handler.handler({}, None)
    assert (answer["statusCode"], answer["headers"]["Retry-After"]) == (503, "60")


def test_closed_signups_answer_403(flags):
    flags.set(signup_enabled=False)
    answer = handler.handler({}, None)
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"])["reason"] == "STATIC"


def test_when_the_flags_cannot_be_read_it_fails_closed(flags):
    flags.delete()  # the item is gone: the declared fallbacks, maintenance on
    assert handler.handler({}, None)["statusCode"] == 503
