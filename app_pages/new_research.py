"""New research: the question, how deep to go, which engine and models, the budget, an
estimate against it, earlier research to build on, and Start."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import streamlit as st

from dashboard import (
    budget,
    connection,
    form,
    form_memory,
    mcp_settings,
    readiness,
    search_services,
    ui,
    views,
)
from dashboard.plain_settings import widgets as plain_widgets
from dashboard.settings_files import configured_llm_providers, defaults_path, load_defaults
from research import validate_question, voice
from research.core.config import DEFAULT_MODELS, ROLES
from research.core.constants import CONSTANTS, MAX_QUESTION_CHARS, PRESET_LABELS, PRESETS
from research.core.errors import ConfigError
from research.estimate import account_pace, cost_range, estimate, time_range
from research.phases.start.preflight import check_configuration
from research.related import similar_runs
from research.search.documents import check_scope
from storage import documents as docstore

PROVIDER_NAMES = {"openai": "OpenAI (or a compatible server)", "gemini": "Google Gemini",
                  "anthropic": "Anthropic Claude"}
SIMILAR_MIN_CHARS = 12
CUSTOM = "custom"  # shown once a setting differs from the chosen preset

env = ui.env()
saved_defaults = load_defaults(defaults_path(ui.db_path()))
env_config, env_problem = form.env_config(env)
configured = configured_llm_providers(env)
engines = form.available_engines(ui.credentials())
state = st.session_state


def _set_language(into: MutableMapping[str, Any], language: str) -> None:
    if language in form.LANGUAGES:
        into["language_choice"], into["language_other"] = language, ""
    else:
        into["language_choice"], into["language_other"] = form.OTHER_LANGUAGE, language


def _set_run_options(into: MutableMapping[str, Any], values: dict) -> None:
    """Engine, language, budget, pauses and schedule (form.run_form_values keys)."""
    into["engine"] = values["engine"] if values["engine"] in engines else "pipeline"
    _set_language(into, values["report_language"])
    into["max_cost_usd"] = float(values["max_cost_usd"])
    into["max_tokens"] = int(values["max_tokens"])
    into["max_sources"] = int(values["max_sources"])
    into["review_plan"] = bool(values["review_plan"])
    into["schedule"] = values["schedule"]
    into["source_mix"] = values["source_mix"]
    into["doc_collection"] = values["doc_collection"]
    into["doc_ids"] = values["doc_ids"]  # documents chosen by an earlier run ("Run again")
    into["done_when"], into["want"] = values.get("done_when", ""), values.get("want", "")
    into["steer"] = bool(values.get("steer"))


def _sources_choice() -> None:
    """Web, the person's documents, or both; and which collection (default: all documents)."""
    st.selectbox("Sources", list(form.MIXES), key="source_mix", format_func=form.MIXES.get,
                 help="Your documents are the files on the Documents page. "
             "\"My documents only\" needs no search key and no internet besides the model.")
    if state.get("source_mix", "web") == "web":
        return
    names = [c.name for c in docstore.list_collections(ui.store())]
    if state.get("doc_collection") not in ["", *names]:
        state["doc_collection"] = ""
    st.selectbox("Documents to read", ["", *names], key="doc_collection",
                 format_func=lambda n: n or "All my documents",
                 help="Group documents into collections on the Documents page.")
    if state.get("doc_ids"):
        also = " as well" if state.get("doc_collection") else ", not all of them"
        st.caption(f"Reads the {len(state['doc_ids'])} document(s) the earlier run was "
                   f"given{also}.")


def _set_constants(into: MutableMapping[str, Any], values: dict) -> None:
    for name, value in values.items():
        if name in CONSTANTS:
            into[f"c_{name}"] = value


def _apply_preset() -> None:
    """A preset chosen (again): its values, even after sliders were moved ("Custom")."""
    if state["preset"] == CUSTOM:
        return  # "Custom" keeps the settings as they are
    state["_base_preset"] = state["preset"]
    _set_constants(state, form.constant_values(env, saved_defaults, state["preset"]))


def _setting_moved() -> None:
    """A slider or setting moved away from the preset's value: the form says "Custom"."""
    base = state.get("_base_preset") or "quick"
    preset = form.constant_values(env, saved_defaults, base)
    if any(state.get(f"c_{name}") != value for name, value in preset.items()):
        state["preset"] = CUSTOM


def _provider_changed() -> None:
    state["model"] = DEFAULT_MODELS.get(state["provider"], "")


def _first_preset() -> str:
    """Quick for a person's first run (a few minutes, a few cents), then the preset of their
    last run; a preset set in the environment or secrets file wins, and default settings
    saved in Settings come before the last run's preset."""
    if env_config and (env.get("DEEP_RESEARCH_PRESET") or "").strip():
        return env_config.preset
    if saved_defaults:  # the person's own defaults (Settings) apply, on the neutral preset
        return "standard"
    latest = ui.store().list_runs(limit=1, person=ui.viewer())
    preset = latest[0].preset if latest else ""
    return preset if preset in PRESETS else "quick"


def _defaults() -> dict[str, Any]:
    """Every form widget's starting value, by key, from the environment, the saved defaults
    and the built-in ones (a plain dict: the caller decides which keys it takes)."""
    preset = _first_preset()
    values: dict[str, Any] = {"preset": preset, "_base_preset": preset, "question": ""}
    _set_constants(values, form.constant_values(env, saved_defaults, preset))
    lead = env_config.role("lead") if env_config else None
    provider = lead.provider if lead and (lead.provider in configured or not configured) else (
        configured[0] if configured else "openai")
    values["provider"] = provider
    values["model"] = lead.model if lead and lead.provider == provider else DEFAULT_MODELS[provider]
    for role in ROLES[1:]:
        spec = env_config.role_models.get(role) if env_config else None
        values[f"role_provider_{role}"] = spec.provider if spec else form.SAME_AS_LEAD
        values[f"role_model_{role}"] = spec.model if spec else ""
    values["search"] = form.default_search(env_config)
    _set_run_options(values, form.run_form_values(
        env_config.model_dump(mode="json") if env_config else {}))
    values["build_on"] = ""
    return values


def _prefill(run_id: str) -> None:
    run = ui.store().get_run(run_id, person=ui.viewer())
    if run is None:
        st.warning("The run to repeat no longer exists; starting from the usual settings.")
        return
    values = form.run_form_values(run.config, run.question)
    state["question"] = values["question"]
    state["preset"] = state["_base_preset"] = values["preset"]
    _set_constants(state, values["constants"])
    if values["provider"] in DEFAULT_MODELS:
        state["provider"] = values["provider"]
        state["model"] = values["model"] or DEFAULT_MODELS[values["provider"]]
    for role in ROLES[1:]:
        spec = values["role_models"].get(role) or {}
        state[f"role_provider_{role}"] = spec.get("provider") or form.SAME_AS_LEAD
        state[f"role_model_{role}"] = spec.get("model") or ""
    if values["search"]:
        state["search"] = values["search"]
    _set_run_options(state, values)


def _fill_missing_defaults() -> list[str]:
    """Give every form widget its starting value when it has none, key by key, on every run.

    A first run cut short (the person typed before the page had finished drawing) leaves
    the later widgets without state, and Streamlit drops the values of widgets a run did
    not draw; checking one key for "already initialised" would leave those empty.
    """
    defaults = _defaults()
    for key, value in defaults.items():
        if key not in state:
            state[key] = value
    return list(defaults)


form_memory.restore(state)  # what the person set before visiting another page
form_keys = _fill_missing_defaults()
repeat = st.query_params.get("from")
if repeat and state.get("_prefilled_from") != repeat:
    state["_prefilled_from"] = repeat
    _prefill(repeat)

st.title("New research")
if not configured:  # first start: the way to Settings comes before anything else
    with st.container(border=True):
        st.markdown("**First, add a key for a model provider.** " + readiness.KEY_EXPLAINED)
        if st.button("Add a key in Settings", type="primary", icon=":material/key:"):
            st.switch_page(ui.PAGES["settings"])
waiting_runs = readiness.runs_wanting_attention(ui.store(), person=ui.viewer())
if waiting_runs:
    with st.container(border=True):
        st.markdown("**Welcome back.** These runs are still working or waiting for you; they "
                    "went on while the page was closed.")
        for waiting in waiting_runs:
            st.page_link(ui.PAGES["run"], query_params={"run": waiting.id},
                         icon=":material/pending:" if waiting.status != "waiting"
                         else ":material/help:",
                         label=f"{views.status_label(waiting.status)}: "
                         + views.md_text(views.run_name(waiting)))
st.write("Ask a question. The research team plans it, searches the web, reads the sources and "
         "writes a cited report. You can watch it work and read the report on the next page.")
if repeat and state.get("_prefilled_from") == repeat:
    st.info("The form is filled in with the settings of an earlier run. Change what you like, "
            "then start.")
if env_problem:
    st.warning(f"A setting in the environment or secrets file is not valid: {env_problem} "
               "The form uses the built-in defaults for it.")

question = st.text_area(
    "Your research question", key="question", height=110,
    placeholder="e.g. What changed in EU rules on AI systems in 2025, and what does it mean "
                "for a small software company?",
)
question_message = st.empty()
length = len((question or "").strip())
if length > MAX_QUESTION_CHARS:
    question_message.error(f"The question is too long ({length} characters); the limit is "
                           f"{MAX_QUESTION_CHARS}. Shorten it or split it into separate runs.")
else:
    st.caption(f"{length} / {MAX_QUESTION_CHARS} characters")

# Earlier research on a close question: the new run can start from its sources.
similar = similar_runs(ui.store(), question, person=ui.viewer()) if length >= SIMILAR_MIN_CHARS else []
build_options = ["", *[r.run.id for r in similar]]
if state.get("build_on") not in build_options:
    state["build_on"] = ""
if similar:
    by_id = {r.run.id: r.run for r in similar}
    with st.container(border=True):
        st.markdown("**Earlier research on a similar question.** Building on it starts the new "
                    "run with that run's sources, so less is searched and read again.")
        for r in similar:
            st.page_link(ui.PAGES["run"], query_params={"run": r.run.id},
                         label=f"{views.md_label(r.run.question, 100)} · "
                               f"{views.short_date(r.run.created_at)[:10]} · "
                               f"{r.similarity:.0%} similar",
                         icon=":material/history:")
        st.radio("Start from", build_options, key="build_on", format_func=lambda rid: (
            "Start from scratch" if not rid else
            f"Build on this run: {views.md_label(by_id[rid].question, 70)}"))

# One box and one button: the question, how deep (a preset) and the estimate; everything else
# is one "More settings" away (issue 39).
top = st.columns([3, 2], gap="large")
top[0].selectbox(
    "How deep", [*PRESETS, CUSTOM], key="preset", on_change=_apply_preset,
    format_func=lambda p: ("Custom: your own settings (choose a preset to start again)"
                           if p == CUSTOM else PRESET_LABELS.get(p, p)),
    help="A preset sets how many subtopics, sources and review cycles at once; under More "
         "settings you can change them one by one.")
estimate_box = top[1].container()
more = st.expander("More settings: the report's shape, sources, models, budget and steps",
                   icon=":material/tune:")
goal_cols = more.columns(2)
goal_cols[0].text_input(
    "Done when ... (optional)", key="done_when", max_chars=500,
    placeholder="e.g. we know the three cheapest options and their costs per kWh",
    help="After each round the planner checks this against the findings and stops research "
         "early once it is met; the report's method notes say whether and when.")
goal_cols[1].text_input(
    "I want ... (optional)", key="want", max_chars=300,
    placeholder="e.g. a one-page brief, a comparison table, a literature review",
    help="The shape of the report: the writer and the reviewer are told.")

left, right = more.columns([3, 2], gap="large")
with left:
    st.subheader("How deep")
    for name, label in (("SUBTOPIC_COUNT", "Subtopics"),
                        ("SOURCES_PER_SUBTOPIC", "Sources per subtopic"),
                        ("REVIEW_CYCLES", "Review cycles")):
        const = CONSTANTS[name]
        st.slider(label, int(const.minimum or 0), int(const.maximum or 0), key=f"c_{name}",
                  help=const.description, on_change=_setting_moved)
    st.checkbox("Ask me clarifying questions first", key="c_REQUIRE_CLARIFICATION",
                help="The planner asks 1-3 short questions (purpose, scope, period) and waits for "
                     "your answers on the Run page before planning.")
    st.checkbox("Ask me between rounds", key="steer",
                help="After each round the run waits on the Run page: tick the branches the "
                     "planner proposes, add your own, or have the report written.")
    st.checkbox("Let me review the plan before research starts", key="review_plan",
                help="The run pauses after planning; on the Run page you can rename, remove, "
                     "add or reorder subtopics and edit their questions.")
    lang_cols = st.columns(2)
    lang_cols[0].selectbox("Report language", [*form.LANGUAGES, form.OTHER_LANGUAGE],
                           key="language_choice",
                           help="Every section of the report, headings included, is written in "
                                "it. Sources may be in any language.")
    if state.get("language_choice") == form.OTHER_LANGUAGE:
        lang_cols[1].text_input("Language", key="language_other", placeholder="e.g. Catalan")

    with st.expander("Budget"):
        st.caption("Research stops when a cap is reached and the report is written from what "
                   "was gathered, clearly marked. 0 means no cap.")
        st.number_input("Cost cap (USD)", 0.0, 10_000.0, step=0.5, format="%.2f", key="max_cost_usd",
                        help="Measured with the same price table as the estimate.")
        st.number_input("Token cap", 0, 1_000_000_000, step=50_000, key="max_tokens",
                        help="How much text the models may read and write in all, counted in "
                             "tokens (a token is about three quarters of a word).")
        st.number_input("Source cap", 0, 10_000, step=10, key="max_sources",
                        help="Sources kept across all subtopics.")

    with st.expander("Advanced settings"):
        st.selectbox("Research schedule", list(form.SCHEDULES), key="schedule",
                     format_func=form.SCHEDULES.get,
                     help="Rounds: after each round the planner sorts the follow-up questions. "
                          "Breadth × depth: the same loop, with new subtopics halving at each level.")
        if state.get("schedule") == "breadth_depth":
            plain_widgets(state, form.SCHEDULE_SLIDERS, on_change=_setting_moved, sliders=True)
        # Each in plain words and units (seconds, minutes), with a sentence of help.
        plain_widgets(state, form.ADVANCED, on_change=_setting_moved)

with right:
    st.subheader("Who does the work")
    if state.get("engine") not in engines:
        state["engine"] = "pipeline"
    st.selectbox("Research done by", engines, key="engine", format_func=form.ENGINE_LABELS.get,
                 help="Hosted engines appear when their key is saved in Settings: OpenAI deep "
                      "research needs an OpenAI key, Gemini Deep Research a Google Gemini key.")
    st.caption(form.ENGINE_HELP[state["engine"]])
    providers_message = st.empty()
    st.selectbox("Model provider", list(DEFAULT_MODELS), key="provider", on_change=_provider_changed,
                 format_func=lambda p: PROVIDER_NAMES[p] + ("" if p in configured else " (no key yet)"))
    st.text_input("Model", key="model", help="The main model; every role uses it unless you "
                  "choose another below. For example: "
                  f"{form.MODEL_EXAMPLES.get(state['provider'], '')}.")
    with st.expander("Models per role"):
        for role in ROLES[1:]:
            cols = st.columns(2)
            cols[0].selectbox(voice.provider_label(role), [form.SAME_AS_LEAD, *DEFAULT_MODELS],
                              format_func=lambda p: "same as the main model"
                              if p == form.SAME_AS_LEAD else PROVIDER_NAMES.get(p, p),
                              key=f"role_provider_{role}")
            cols[1].text_input(voice.model_label(role), key=f"role_model_{role}",
                               placeholder="provider default")
    _sources_choice()
    if state.get("source_mix", "web") == "documents":  # no search service is asked
        st.caption("My documents only: nothing is searched on the web, so no search "
                   "service or search key is needed.")
    else:
        st.multiselect("Search services", [*search_services.options(env, state.get("search") or []),
                                           *mcp_settings.provider_names(env)],
                       key="search",
                       format_func=lambda name: mcp_settings.label(readiness.search_label(name, env)),
                       help="Every service listed here is searched, and only these. arXiv and "
                            "Semantic Scholar search academic papers (on by default); Tavily needs "
                            "a key (Settings); the web search needs none. SearXNG, Brave Search, Exa "
                            "and Serper appear once their key (or SearXNG's address) is in Settings.")
    if not configured:
        providers_message.error("No model provider is set up yet. Add an OpenAI, Gemini or "
                                "Anthropic key (or a local OpenAI-compatible server address) on "
                                "the Settings page.")
        st.page_link(ui.PAGES["settings"], label="Open Settings", icon=":material/settings:")


def _current_config():
    mix = state.get("source_mix") or "web"
    return form.build_form_config(
        env, preset=state["_base_preset"] if state["preset"] == CUSTOM else state["preset"],
        constants={name: state[f"c_{name}"] for name in CONSTANTS},
        provider=state["provider"], model=state.get("model") or "",
        role_models={r: (state[f"role_provider_{r}"], state.get(f"role_model_{r}") or "")
                     for r in ROLES[1:]},
        search=list(state.get("search") or []),
        extra={
            "engine": state["engine"],
            "report_language": (state.get("language_other") or "").strip()
            if state.get("language_choice") == form.OTHER_LANGUAGE else state["language_choice"],
            "max_cost_usd": float(state.get("max_cost_usd") or 0.0),
            "max_tokens": int(state.get("max_tokens") or 0),
            "max_sources": int(state.get("max_sources") or 0),
            "review_plan": bool(state.get("review_plan")),
            "schedule": state.get("schedule") or "rounds",
            "done_when": (state.get("done_when") or "").strip(),
            "want": (state.get("want") or "").strip(),
            "steer": bool(state.get("steer")),
        },
        mix=mix, collection=state.get("doc_collection") or "" if mix != "web" else "",
        document_ids=state.get("doc_ids") or [] if mix != "web" else [],
    )


config_error: str | None = None
try:
    config = _current_config()
except ConfigError as exc:
    config, config_error = None, str(exc)

with estimate_box:
    if config is None:
        st.error(config_error)
    elif state["provider"] not in configured:
        st.caption("The estimate of time and cost appears once a model provider has a key.")
    elif config.engine in form.ENGINE_NEEDS and config.engine != "all":
        st.info(views.dollars(
            "A hosted engine decides for itself how much to search and read, so there is no "
            "estimate. Its cost is known when it finishes; "
            + (f"your cost cap of {voice.money(config.max_cost_usd)} still applies."
               if config.max_cost_usd else "set a cost cap under Budget to limit it.")))
    else:
        guess = estimate(config, ui.prices())
        paced_by = account_pace(guess, config, ui.credentials(), ui.store())  # None: none known
        cols = st.columns(2)
        cols[0].metric("Web searches" if config.uses_web() else "Searches of your documents",
                       f"~{guess.searches}")
        cols[1].metric("Model calls", f"~{guess.model_calls}")
        cols[0].metric("Time", f"~{time_range(guess, paced_by)}")
        cols[1].metric("Cost", views.dollars(cost_range(guess) + (
            f" (cap {voice.money(config.max_cost_usd)})" if config.max_cost_usd else "")))
        st.caption(f"About {guess.pages_read} pages read. Rough figures "
                   "from typical sizes; the real run may differ. "
                   + views.dollars(budget.cap_caption(config)))
        if paced_by is not None:
            st.caption(f":material/speed: {paced_by.text}")
        if config.engine == "all":
            st.caption("The hosted engines' cost is not included: it is known when they finish, "
                       "and it counts toward the cost cap.")
        if guess.unpriced_models:
            st.caption("No price known for " + ", ".join(guess.unpriced_models)
                       + " (counted as free; add it to data/prices.json).")
        for warning in budget.estimate_warnings(guess, config, budget.expected_sources(config)):
            st.warning(views.dollars(warning))

start_message = st.empty()
not_ready = readiness.blockers(
    env, provider=state["provider"], configured=configured,
    search=["documents"] if state.get("source_mix") == "documents" else state.get("search") or [],
    failed_tests=connection.failed(st.session_state.get(connection.RESULTS, {}), env))
for reason in not_ready:
    st.caption(f":material/block: {views.md_text(reason)}")  # a test's message: plain words
if st.button("Start research", type="primary", icon=":material/play_arrow:",
             disabled=bool(not_ready)):
    try:
        text = validate_question(question or "")
    except ConfigError as exc:
        question_message.error(str(exc))
    else:
        if config is None:
            start_message.error(f"Nothing was started: {config_error}")
        else:
            creds = ui.credentials()
            try:
                check_scope(ui.store(), config)
                check_configuration(config, creds)
                run_id = ui.jobs().start(text, config, creds, prices=ui.prices(),
                                         parent_run_id=state.get("build_on") or None,
                                         person=ui.viewer())
            except ConfigError as exc:
                start_message.error(f"Nothing was started: {exc}")
            else:
                form_memory.forget(state)
                ui.open_run(run_id)
form_memory.keep(state, form_keys)
