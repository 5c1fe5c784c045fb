"""Settings: API keys (always masked), models per role, search providers, default constants,
a connection test per provider, notifications outside the browser (dashboard/notify_settings.py),
and the HTTP API's tokens (made, shown once, revoked)."""

from __future__ import annotations

import os

import streamlit as st

from dashboard import (
    connection,
    mcp_settings,
    notify_settings,
    readiness,
    search_services,
    ui,
    views,
)
from dashboard.connection import check_llm, check_search
from dashboard.settings_files import (
    KEYS,
    SettingsFileError,
    configured_llm_providers,
    defaults_path,
    load_defaults,
    mask,
    origin,
    read_secrets,
    save_defaults,
    save_secrets,
    secrets_path,
)
from research import voice
from research.api.tokens import create_token
from research.core.config import DEFAULT_MODELS, ROLES, SEARCH_PROVIDERS
from research.core.constants import CONSTANTS, DEFAULTS
from research.export.method import plain_name
from storage import tokens as tokenstore

ORIGIN_TEXT = {"environment": "set in the environment", "secrets file": "saved here (secrets file)",
               None: "not set"}
# The server-address settings in plain words; the technical name stays in the tooltip.
URL_LABELS = {"OPENAI_BASE_URL": "OpenAI-compatible server address (Ollama, vLLM, LM Studio...)",
              "GEMINI_BASE_URL": "Gemini server address",
              "ANTHROPIC_BASE_URL": "Anthropic server address (a proxy)",
              "TAVILY_BASE_URL": "Tavily server address",
              "SEARXNG_BASE_URL": "Your SearXNG instance's address (e.g. http://localhost:8888)"}

st.title("Settings")
path = secrets_path()
try:
    file_values = read_secrets(path)
except SettingsFileError as exc:
    st.error(views.md_text(exc))
    file_values = {}
env = ui.env()
if st.session_state.pop("settings_clear_keys", False):
    for _name in KEYS:  # never keep a typed key in the page once it is saved
        st.session_state.pop(f"key_{_name}", None)
flash = st.session_state.pop("settings_flash", None)
if flash:
    st.success(flash)


def _save(updates: dict, done: str) -> None:
    try:
        save_secrets(updates, path)
    except SettingsFileError as exc:
        st.session_state["settings_error"] = str(exc)
    else:
        st.session_state["settings_flash"] = done


error = st.session_state.pop("settings_error", None)
if error:
    st.error(views.md_text(error))

st.header("API keys")
st.write(f"Keys you enter are saved in `{path.name}` on this computer (readable only by you, never "
         "committed). A key set in the environment always wins over a saved one.")
with st.form("keys", clear_on_submit=True):
    entered = {}
    for name, label in KEYS.items():
        where = origin(name, os.environ, file_values)
        current = env.get(name) if where else None
        st.markdown(f"**{label}** · {ORIGIN_TEXT[where]}"
                    + (f" · `{mask(current)}`" if current else ""),
                    help=f"Also read from the environment variable {name}.")
        entered[name] = st.text_input(f"New {label} key", type="password", key=f"key_{name}",
                                      placeholder="paste a new key to replace the current one",
                                      label_visibility="collapsed")
    if st.form_submit_button("Save keys", type="primary"):
        updates = {k: v.strip() for k, v in entered.items() if v and v.strip()}
        if updates:
            _save(updates, f"Saved {len(updates)} key(s).")
            st.session_state["settings_clear_keys"] = True
            st.rerun()
        else:
            st.info("Nothing to save: paste a key first.")

removable = [name for name in KEYS if str(file_values.get(name) or "").strip()]
if removable:
    with st.expander("Remove a saved key"):
        target = st.selectbox("Key", removable, key="remove_key", format_func=lambda n: f"{KEYS[n]} key")
        if st.button("Remove it from the secrets file"):
            _save({target: None}, f"Removed the saved {KEYS[target]} key.")
            st.rerun()

st.header("Models and search")
st.write("Which model each role uses and which search providers runs use by default. The New "
         "research form starts from these.")
with st.form("models"):
    provider = st.selectbox("Model provider", list(DEFAULT_MODELS),
                            index=list(DEFAULT_MODELS).index(env.get("DEEP_RESEARCH_PROVIDER", "openai")
                                                              if env.get("DEEP_RESEARCH_PROVIDER") in DEFAULT_MODELS
                                                              else "openai"))
    model = st.text_input("Model (lead, and every role without its own)",
                          value=env.get("DEEP_RESEARCH_MODEL", ""), placeholder=DEFAULT_MODELS[provider])
    role_values = {}
    for role in ROLES[1:]:
        var = f"DEEP_RESEARCH_{role.upper()}_MODEL"
        role_values[var] = st.text_input(voice.model_label(role), value=env.get(var, ""),
                                         placeholder="same as the lead")
    search_choices = [*SEARCH_PROVIDERS, *mcp_settings.provider_names(env)]
    current_search = [s.strip() for s in env.get("DEEP_RESEARCH_SEARCH", "").split(",")
                      if s.strip() in search_choices]
    search = st.multiselect("Search providers", search_choices, default=current_search,
                            format_func=lambda name: mcp_settings.label(
                                readiness.search_label(name, env)),
                            placeholder="automatic: Tavily when it has a key, otherwise the free web search")
    st.markdown("**Server addresses** (only for a local or compatible server, or a proxy)")
    urls = {var: st.text_input(label, value=env.get(var, ""), help=f"The setting {var}.")
            for var, label in URL_LABELS.items()}
    st.caption(" ".join(search_services.WHERE.values()))
    if st.form_submit_button("Save models and search"):
        if search_services.address_problem(urls["SEARXNG_BASE_URL"]):
            st.session_state["settings_error"] = search_services.address_problem(
                urls["SEARXNG_BASE_URL"])
            st.rerun()
        updates = {"DEEP_RESEARCH_PROVIDER": provider, "DEEP_RESEARCH_MODEL": model,
                   "DEEP_RESEARCH_SEARCH": ",".join(search), **role_values, **urls}
        overridden = [k for k in updates if (os.environ.get(k) or "").strip()]
        _save(updates, "Saved." + (f" Note: {views.plain_words(', '.join(overridden))} are set in "
                                   "the environment, which wins over what is saved here."
                                   if overridden else ""))
        st.rerun()

mcp_settings.section(path, env)

st.header("Test connection")
st.write("Makes one tiny real call to each provider and tells you whether it works.")
configured = configured_llm_providers(env)
results: dict[str, connection.Check] = st.session_state.setdefault(connection.RESULTS, {})


def show_result(name: str) -> None:
    """The last test of `name`, kept until it is tested again (stale once its key changed)."""
    result = results.get(name)
    if result is None:
        return
    if result.key != connection.fingerprint(name, env):
        st.caption("The key or address changed since the last test: test again.")
    else:
        (st.success if result.ok else st.error)(views.md_text(result.message))


cols = st.columns(2)
with cols[0]:
    for name in DEFAULT_MODELS:
        model_name = (env.get("DEEP_RESEARCH_MODEL") if env.get("DEEP_RESEARCH_PROVIDER", "openai") == name
                      else None) or DEFAULT_MODELS[name]
        label = f"Test {connection.display_name(name)} ({model_name})"
        if st.button(label, key=f"test_llm_{name}", disabled=name not in configured,
                     help=None if name in configured else "Add its key first."):
            with st.spinner(f"Asking {connection.display_name(name)}…"):
                ok, message = check_llm(name, model_name, env)
            results[name] = connection.Check(ok, message, connection.fingerprint(name, env))
        show_result(name)
with cols[1]:
    for name in SEARCH_PROVIDERS:
        needs = search_services.missing(name, env)
        if st.button(f"Test {connection.display_name(name)}", key=f"test_search_{name}",
                     disabled=needs is not None, help=f"Add {needs} first." if needs else None):
            with st.spinner(f"Searching with {connection.display_name(name)}…"):
                ok, message = check_search(name, env)
            results[name] = connection.Check(ok, message, connection.fingerprint(name, env))
        show_result(name)

st.header("Default research settings")
st.write("The values the New research form starts from (a preset chosen there still applies on top).")
dpath = defaults_path(ui.db_path())
saved = load_defaults(dpath)
# What the form showed when editing began: a save applies only what the person changed
# from it, so a save made meanwhile in another tab is kept (settings_files.save_defaults).
shown = st.session_state.setdefault("defaults_shown", {n: saved.get(n, DEFAULTS[n]) for n in CONSTANTS})
with st.form("defaults"):
    values = {}
    for name, const in CONSTANTS.items():
        value = saved.get(name, DEFAULTS[name])
        label = plain_name(name).capitalize()
        if const.kind is bool:
            values[name] = st.toggle(label, value=bool(value), help=f"{const.description} ({name})")
        elif const.kind is float:
            values[name] = st.number_input(label, float(const.minimum or 0), float(const.maximum or 1),
                                           float(value), step=0.05, help=f"{const.description} ({name})")
        else:
            values[name] = st.number_input(label, int(const.minimum or 0), int(const.maximum or 10**9),
                                           int(value), step=1, help=f"{const.description} ({name})")
    if st.form_submit_button("Save defaults"):
        try:
            save_defaults(values, dpath, base=shown)
        except SettingsFileError as exc:
            st.error(views.md_text(exc))
        else:
            st.session_state.pop("defaults_shown", None)
            st.session_state["settings_flash"] = "Default research settings saved."
            st.rerun()
if saved and st.button("Reset to the built-in defaults"):
    try:
        save_defaults(dict(DEFAULTS), dpath)
    except SettingsFileError as exc:
        st.error(views.md_text(exc))
    else:
        st.session_state.pop("defaults_shown", None)
        st.session_state["settings_flash"] = "Defaults reset."
        st.rerun()

notify_settings.render(env, ui.viewer(), path, file_values)  # targets are kept like keys

st.header("API tokens")
st.write("Programs and agents reach this studio through its HTTP API (start it with "
         "`python -m research serve`) with a token. A token acts as you: it sees and starts "
         "only your runs. It is shown once, when it is made; only its fingerprint is kept.")
api_store, api_person = ui.store(), ui.viewer()
made_token = st.session_state.pop("api_token_made", None)
if made_token:
    st.success("Token made. Copy it and its signing secret now: they are not shown again.")
    st.caption("The token (send it as 'Authorization: Bearer …'):")
    st.code(made_token["text"], language=None)
    st.caption("The signing secret (callbacks carry an X-Signature made with it):")
    st.code(made_token["secret"], language=None)
with st.form("api_token", clear_on_submit=True):
    token_name = st.text_input("What it is for", max_chars=80, placeholder="e.g. nightly script")
    if st.form_submit_button("Make a token", icon=":material/key:"):
        new_token = create_token(api_store, env, ui.db_path().parent, person=api_person,
                                 name=token_name)
        st.session_state["api_token_made"] = {"text": new_token.text,
                                              "secret": new_token.signing_secret}
        st.rerun()
for api_token in tokenstore.list_tokens(api_store, person=api_person):
    cols = st.columns([3, 2, 1])
    used = f"last used {api_token.last_used_at[:16]}" if api_token.last_used_at else "never used"
    cols[0].text(f"{api_token.name or 'Unnamed token'} ({api_token.id})")  # text: no markup
    cols[1].caption(f"revoked {api_token.revoked_at[:16]}" if api_token.revoked_at else
                    f"made {api_token.created_at[:16]}, {used}")
    if not api_token.revoked_at and cols[2].button("Revoke", key=f"revoke_{api_token.id}"):
        tokenstore.revoke_token(api_store, api_token.id, person=api_person)
        st.session_state["settings_flash"] = "Token revoked: requests with it are refused now."
        st.rerun()
