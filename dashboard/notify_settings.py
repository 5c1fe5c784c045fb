"""Settings → Notifications: where a person is told when a run finishes, fails or waits, and
when a watched topic changed (research/living/notify.py), with a "Send a test" button.

Targets are Apprise URLs and are secrets (they hold tokens and passwords): saved like keys, in
the secrets file (owner-only; dashboard/settings_files.py), one setting per signed-in person,
and never shown again: the page names only each target's service. The link's base address is a
plain setting beside them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import views
from dashboard.settings_files import SettingsFileError, origin, save_secrets
from research.living import notify

EXAMPLES = (
    "`mailto://user:app-password@gmail.com` (e-mail) · `slack://TokenA/TokenB/TokenC` · "
    "`msteams://…` (Teams) · `tgram://bot-token/chat-id` (Telegram) · `ntfy://my-topic` · "
    "`json://example.org/hook` (a webhook)"
)


def services(urls: list[str]) -> str:
    """What the targets are, never what they hold: 'slack, mailto' (letters and digits only,
    so the line needs no escaping)."""
    names = (re.sub(r"[^a-z0-9]", "", u.split("://", 1)[0].lower()) if "://" in u else ""
             for u in urls)
    return ", ".join(name or "unknown" for name in names)


def describe(env: Mapping[str, str], person: str | None,
             file_values: Mapping[str, Any] | None = None) -> str:
    """One line on the targets set for `person`, in plain words."""
    urls = notify.targets(env, person)
    if not urls:
        return "No notification target is set: you are told only in this browser."
    where = origin(notify.target_key(person), os.environ, file_values)
    place = "set in the environment" if where == "environment" else "saved here (secrets file)"
    return f"{len(urls)} target(s) {place}: {services(urls)}."


def check_targets(text: str) -> tuple[list[str], str | None]:
    """The targets typed (spaces, commas or lines between them), or why they cannot be saved."""
    urls = notify.targets({notify.NOTIFY_KEY: text}, None)
    bad = [u for u in urls if "://" not in u]
    if bad:
        return [], (f"{len(bad)} target(s) are not addresses like `service://…`; see the "
                    "examples above.")
    return urls, None


def render(env: Mapping[str, str], person: str | None, path: Path,
           file_values: Mapping[str, Any]) -> None:
    """The Notifications section of the Settings page."""
    key = notify.target_key(person)
    if st.session_state.pop("notify_clear", False):  # never keep typed targets in the page
        st.session_state.pop("notify_new_targets", None)
    st.header("Notifications")
    st.write("Be told outside the browser when a run finishes, fails or waits for your answer, "
             "and when a topic you watch has changed: by e-mail, Slack, Teams, Telegram, ntfy, "
             "a webhook and many more, through Apprise. Each target is an address that holds "
             "its own token or password, so it is kept like a key: saved only in "
             f"`{path.name}` on this computer and never shown again.")
    st.caption("Examples: " + EXAMPLES)
    st.markdown(describe(env, person, file_values),  # our words and service names only
                help=f"Also read from the environment variable {key}.")
    with st.form("notify_targets", clear_on_submit=True):
        typed = st.text_input("New targets", type="password", key="notify_new_targets",
                              placeholder="paste one or more addresses, separated by spaces",
                              help="Apprise addresses: https://github.com/caronc/apprise/wiki")
        base = st.text_input("Address of this studio, for the link in each message",
                             value=env.get(notify.BASE_URL_KEY, ""),
                             placeholder=notify.DEFAULT_BASE_URL,
                             help=f"The setting {notify.BASE_URL_KEY}.")
        if st.form_submit_button("Save notifications"):
            urls, problem = check_targets(typed or "")
            if problem:
                st.session_state["settings_error"] = problem
            else:
                updates = {notify.BASE_URL_KEY: base.strip()}
                if urls:
                    updates[key] = " ".join(urls)
                _save(updates, path, "Notifications saved.")
                st.session_state["notify_clear"] = True
            st.rerun()
    buttons = st.container(horizontal=True)
    if buttons.button("Send a test", icon=":material/notifications:",
                      disabled=not notify.targets(env, person),
                      help=None if notify.targets(env, person) else "Add a target first."):
        with st.spinner("Sending…"):
            sent = notify.send_test(env, person)
        if sent.ok:
            st.success(f"Sent to {sent.delivered} target(s). Check that it arrived.")
        else:
            st.error(views.md_text(sent.problem or "Nothing was sent."))
    if str(file_values.get(key) or "").strip() and buttons.button("Remove the saved targets"):
        _save({key: None}, path, "Notification targets removed.")
        st.rerun()


def _save(updates: Mapping[str, str | None], path: Path, done: str) -> None:
    try:
        save_secrets(updates, path)
    except SettingsFileError as exc:
        st.session_state["settings_error"] = str(exc)
    else:
        st.session_state["settings_flash"] = done
