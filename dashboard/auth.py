"""Sign-in for a team: Streamlit's own OpenID Connect sign-in (`st.login`), and whose runs a
session sees.

With an `[auth]` section in `.streamlit/secrets.toml` (redirect_uri, cookie_secret,
client_id, client_secret, server_metadata_url: Streamlit's documented settings) every page
asks to sign in first, and each person sees only the runs they started. Without it nothing
changes: one person, no prompt, every run. Who a person is: the e-mail address the provider
vouches for, else its subject id (`sub`); the same text is the run's person in the store and
its fair-share person on the queue (`research.runs.engine`).
"""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAuthError

SIGN_IN_TITLE = "Sign in to Deep Research Studio"


def enabled() -> bool:
    """True when the secrets file Streamlit reads has an `[auth]` section."""
    return st.secrets.load_if_toml_exists() and "auth" in st.secrets


def signed_in_person() -> str | None:
    """The signed-in person's identity, or None when nobody is signed in."""
    if not st.user.is_logged_in:
        return None
    for claim in ("email", "sub"):
        value = st.user.get(claim)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def needs_sign_in() -> bool:
    """True when sign-in is on and this session has not signed in yet."""
    return enabled() and signed_in_person() is None


def viewer() -> str | None:
    """Whose runs this session may see: the signed-in person, or None without sign-in (one
    person, every run). With sign-in but nobody signed in, the page shows the sign-in prompt
    and stops, so no page ever reads runs for an unknown person."""
    if not enabled():
        return None
    person = signed_in_person()
    if person is None:
        sign_in_page()
        st.stop()
    return person


def sign_in_page() -> None:
    """The one page a visitor sees before signing in (app.py shows it for every address)."""
    st.title(SIGN_IN_TITLE)
    st.write("This dashboard is shared by a team: sign in to see and start your own research "
             "runs. Each person sees only the runs they started.")
    if st.query_params.get("run"):
        st.caption("You followed a link to a run: after signing in, open the link again.")
    if st.button("Sign in", type="primary", icon=":material/login:"):
        try:
            st.login()
        except StreamlitAuthError as exc:  # an incomplete [auth] section, said in plain words
            st.error(f"Sign-in is not set up correctly in .streamlit/secrets.toml: {exc}")


def account_sidebar() -> None:
    """Who is signed in, and a way to sign out (only with sign-in on)."""
    person = signed_in_person() if enabled() else None
    if person is None:
        return
    st.text(f"Signed in as {person}")  # plain text: no link, no markup
    if st.button("Sign out", icon=":material/logout:", key="auth_sign_out"):
        st.logout()
