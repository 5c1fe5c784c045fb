"""Settings' API tokens: made on the page, shown once, stored only as a hash, revoked there;
a token made there authenticates as the person who made it (research.api.auth)."""

from __future__ import annotations

import hashlib
import os

import pytest

from research.api.auth import Authenticator, RateLimiter
from research.api.errors import ApiError
from storage import Store
from storage import tokens as tokenstore
from tests.dashboard_fixtures import dash_env_fixture, open_page  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("dash_env")


def test_a_token_made_in_settings_is_shown_once_works_and_is_revoked_there() -> None:
    at = open_page("app_pages/settings.py").run()
    form_input = next(t for t in at.text_input if t.label == "What it is for")
    form_input.input("nightly script")
    next(b for b in at.button if b.label == "Make a token").click()
    at.run()
    assert not at.exception
    shown = [c.value for c in at.code]
    token = next(v for v in shown if v.startswith("drs_"))
    secret = next(v for v in shown if v.startswith("whsec_"))
    store = Store(os.environ["DEEP_RESEARCH_DB"])
    found = tokenstore.list_tokens(store)
    assert [t.name for t in found] == ["nightly script"] and found[0].person is None
    everything = "\n".join(str(row) for row in store.query("SELECT * FROM api_tokens"))
    assert token not in everything and secret not in everything
    assert hashlib.sha256(token.encode()).hexdigest() in everything
    caller = Authenticator(store, RateLimiter(10)).authenticate(f"Bearer {token}")
    assert caller.token_id == found[0].id and caller.person is None

    at.run()  # shown once: the next drawing of the page has no token on it
    assert not [c for c in at.code if c.value.startswith("drs_")]
    next(b for b in at.button if b.label == "Revoke").click()
    at.run()
    assert not at.exception
    with pytest.raises(ApiError) as refused:
        Authenticator(store, RateLimiter(10)).authenticate(f"Bearer {token}")
    assert refused.value.status == 401
