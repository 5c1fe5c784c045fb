"""Sign-in for a team, in a real browser (issue 18, point 6).

A real `streamlit run` with an `[auth]` section in its secrets file signs people in through
Streamlit's own OpenID Connect flow (`st.login`, Authlib) against a local test provider from
PyPI (`oidc-provider-mock`, on 127.0.0.1; its form lets a test type any person). Each person
sees only their own runs: a run started in the browser belongs to whoever started it, and a
second person who opens the first person's link is told there is no such run. Without
`[auth]`, one person sees every run and is never asked to sign in.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import Store
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import free_port, wait_idle
from tests.browser_pages import BROWSER_TESTS, main, own_server, query, sync_api, watched_page
from tests.dashboard_fixtures import finished_run

pytestmark = BROWSER_TESTS

ALICE, BOB = "alice@example.org", "bob@example.org"
ALICE_OLD = "How do heat pumps perform in cold climates?"
ALICE_NEW = "What limits the lifetime of lithium-ion batteries?"
NOBODYS = "What did the town council decide about the bridge?"  # started before sign-in
SIGN_IN = "Sign in to Deep Research Studio"
NOT_FOUND = "There is no such run"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """The OpenID Connect test provider on 127.0.0.1; yields its address (imported here, not
    at collection, which every xdist worker does for every module: about 0.25 CPU-s)."""
    oidc_mock = pytest.importorskip("oidc_provider_mock", reason="oidc-provider-mock is not installed")
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", free_port(), oidc_mock.app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)


def _auth_secrets(path: Path, port: int, provider: str) -> None:
    """Streamlit's documented `[auth]` settings, pointed at the test provider."""
    path.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "deep-research-studio"\n'
        'client_secret = "test-client-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8")


def _sign_in(page: Any, base: str, person: str) -> None:
    """From the sign-in prompt, through the provider's form, back to the dashboard."""
    content = main(page)
    sync_api.expect(content.get_by_role("heading", name=SIGN_IN)).to_be_visible()
    content.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/oauth2/authorize"))
    page.get_by_placeholder("sub").fill(person)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(base) + r"/?(\?.*)?$"))
    sidebar = page.get_by_test_id("stSidebar")
    sync_api.expect(sidebar.get_by_text(f"Signed in as {person}")).to_be_visible()
    wait_idle(page)


def _seed(store: Store) -> tuple[str, str]:
    """A finished run of Alice's, and one started before sign-in (nobody's)."""
    return finished_run(store, ALICE_OLD, person=ALICE), finished_run(store, NOBODYS)


def test_each_person_signs_in_and_sees_only_their_own_runs(
    browser: Any, dashboard_env: dict[str, str], provider: str, tmp_path: Path
) -> None:
    # Kept open while the dashboard runs, as the other browser tests do.
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    alice_old, _ = _seed(store)
    streamlit_secrets = tmp_path / "streamlit-secrets.toml"
    env = {**dashboard_env, "STREAMLIT_SECRETS_FILES": str(streamlit_secrets)}
    server = own_server(env, "sign-in")
    _auth_secrets(streamlit_secrets, server.port, provider)
    with server:
        with watched_page(browser, server, "sign-in-alice") as (page, _):
            # Alice: every page asks first; nothing of the app shows before she signs in.
            page.goto(f"{server.url}/library")
            sync_api.expect(main(page).get_by_role("heading", name=SIGN_IN)).to_be_visible()
            sync_api.expect(page.get_by_text(ALICE_OLD)).to_have_count(0)
            sync_api.expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
            _sign_in(page, server.url, ALICE)

            # She starts a run in the browser: it is hers.
            sync_api.expect(page.get_by_role("heading", name="New research")).to_be_visible()
            # As in test_browser_journey.py: touching the form before its first run is drawn in full
            # can blank its Search services field (seen here on a busy machine).
            searches = page.locator('[data-testid="stMetric"]').filter(has_text="Web searches")
            sync_api.expect(searches).to_be_visible(timeout=60_000)
            wait_idle(page)
            box = page.get_by_label("Your research question")
            box.fill(ALICE_NEW)
            box.press("Control+Enter")
            wait_idle(page)
            page.get_by_role("button", name="Start research").click()
            page.wait_for_url(re.compile(r"/run\?run=[^&]+"))
            alice_new = query(page.url, "run")
            assert store.get_run(alice_new).person == ALICE  # type: ignore[union-attr]

            # Her Library lists her two runs, not the run nobody signed in for.
            page.get_by_test_id("stSidebarNav").get_by_role("link", name="Library").click()
            page.wait_for_url(re.compile(r"/library"))
            content = main(page)
            sync_api.expect(content.get_by_text("2 run(s)")).to_be_visible()
            page.goto(f"{server.url}/run?run={alice_old}")
            sync_api.expect(main(page).get_by_text(ALICE_OLD).first).to_be_visible()

        with watched_page(browser, server, "sign-in-bob") as (page, _):  # another browser: Bob
            page.goto(f"{server.url}/run?run={alice_old}")  # Alice's link, before signing in
            sync_api.expect(main(page).get_by_role("heading", name=SIGN_IN)).to_be_visible()
            sync_api.expect(page.get_by_text(ALICE_OLD)).to_have_count(0)
            _sign_in(page, server.url, BOB)
            for run_id in (alice_old, alice_new):  # Alice's links, signed in as Bob
                page.goto(f"{server.url}/run?run={run_id}")
                content = main(page)
                sync_api.expect(content.get_by_text(NOT_FOUND)).to_be_visible()
                wait_idle(page)
                for question in (ALICE_OLD, ALICE_NEW):
                    sync_api.expect(page.get_by_text(question)).to_have_count(0)
            page.goto(f"{server.url}/library")
            sync_api.expect(main(page).get_by_text("No research yet")).to_be_visible()
            wait_idle(page)
            sync_api.expect(page.get_by_text(ALICE_OLD)).to_have_count(0)
            sync_api.expect(page.get_by_text(NOBODYS)).to_have_count(0)


def test_without_auth_one_person_is_never_asked_to_sign_in_and_sees_every_run(
    browser: Any, shared_dashboard: SharedDashboard
) -> None:
    # The shared dashboard's Streamlit secrets file has no [auth] section.
    assert "[auth]" not in Path(shared_dashboard.env["STREAMLIT_SECRETS_FILES"]).read_text()
    store = Store(shared_dashboard.db)
    try:
        alice_old, nobodys = _seed(store)
    finally:
        store.close()
    server = shared_dashboard.server
    with watched_page(browser, server, "no-sign-in") as (page, _):
        page.goto(f"{server.url}/library")
        content = main(page)
        # Every run is listed, Alice's and nobody's (the shared database holds other tests' too).
        for question in (ALICE_OLD, NOBODYS):
            sync_api.expect(content.get_by_text(question).first).to_be_attached()  # a table cell
        wait_idle(page)
        sync_api.expect(page.get_by_text(SIGN_IN)).to_have_count(0)
        sync_api.expect(page.get_by_text("Signed in as")).to_have_count(0)
        for run_id, question in ((alice_old, ALICE_OLD), (nobodys, NOBODYS)):
            page.goto(f"{server.url}/run?run={run_id}")
            sync_api.expect(main(page).get_by_text(question).first).to_be_visible()
