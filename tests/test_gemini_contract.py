"""Every Gemini request goes to an API version whose published contract has every field sent.

google-genai 3.x sends to `v1` unless told otherwise, and Google's `v1` GenerateContentRequest
has no `systemInstruction` and its GenerationConfig no `responseMimeType`: a server that keeps
to the contract refuses such a body (400 "Unknown name ... Cannot find field"). The stand-in
now refuses the same way (tests/standin/protos.py reads Google's protos, copied under
tests/fixtures/googleapis), and these tests check the bodies a complete run sends through the
real SDK against the protos of the version in their path, and against `v1`.
"""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.connection import check_llm
from research.core.config import build_config
from research.core.errors import ProviderError
from research.llm import gemini_llm
from research.llm.gemini_llm import GeminiChat
from research.llm.messages import Message
from tests.runs import Runner
from tests.standin import StandinServer, protos
from tests.standin.server import GEMINI_KEY

REQUEST = "GenerateContentRequest"


def _version(path: str) -> str:
    return path.split("/")[1]


def _gemini_bodies(standin: StandinServer) -> list[tuple[str, dict[str, Any]]]:
    return [(r["path"], r["json"]) for r in standin.requests_for("gemini")]


# --- the proto reader itself -----------------------------------------------------------

def test_the_protos_know_each_versions_fields_by_proto_and_json_name() -> None:
    v1, v1beta = protos.contract("v1"), protos.contract("v1beta")
    assert v1 is not None and v1beta is not None
    request = f"{protos.PACKAGE}.v1beta.{REQUEST}"
    fields = v1beta.messages[request].fields
    assert fields["systemInstruction"] is fields["system_instruction"]
    assert "system_instruction" not in v1.messages[f"{protos.PACKAGE}.v1.{REQUEST}"].fields
    # json_name wins over the camelCase of the proto name: v1beta's `responseJsonSchema` is
    # the field `response_json_schema_ordered`, and `response_json_schema` is "_responseJsonSchema".
    config = v1beta.messages[f"{protos.PACKAGE}.v1beta.GenerationConfig"].fields
    assert config["responseJsonSchema"].name == "response_json_schema_ordered"
    assert config["_responseJsonSchema"].name == "response_json_schema"


def test_unknown_keys_are_found_at_any_depth_with_googles_path() -> None:
    v1beta = protos.contract("v1beta")
    assert v1beta is not None
    body = {
        "contents": [{"role": "user", "parts": [{"text": "a"}]},
                     {"role": "user", "parts": [{"text": "b", "txt": "c"}]}],
        "generationConfig": {"responseMimeType": "application/json", "temprature": 0.2,
                             # a JSON schema is a google.protobuf.Value: any keys pass
                             "responseJsonSchema": {"type": "object", "anything": {"x": 1}}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF",
                            "level": 1}],
    }
    assert v1beta.unknown_names(REQUEST, body) == [
        ("txt", "contents[1].parts[0]"), ("temprature", "generation_config"),
        ("level", "safety_settings[0]")]
    message = protos.unknown_name_error([("txt", "contents[1].parts[0]")])["error"]["message"]
    assert message == ('Invalid JSON payload received. Unknown name "txt" at '
                       "'contents[1].parts[0]': Cannot find field.")


# --- what the app sends -----------------------------------------------------------------

def test_a_complete_gemini_run_sends_only_fields_its_versions_contract_has(
    standin: StandinServer, http_runs: Runner
) -> None:
    http_runs.with_env(DEEP_RESEARCH_PROVIDER="gemini")
    store, run_id = http_runs(preset="quick")
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error

    bodies = _gemini_bodies(standin)
    assert len(bodies) > 10
    assert {_version(path) for path, _ in bodies} == {gemini_llm.API_VERSION}
    structured = [b for _, b in bodies if "responseJsonSchema" in b.get("generationConfig", {})]
    assert structured and any("systemInstruction" in b for b in structured)
    assert any("responseJsonSchema" not in b.get("generationConfig", {}) for _, b in bodies)
    for path, body in bodies:
        contract = protos.contract(_version(path))
        assert contract is not None, path
        assert contract.unknown_names(REQUEST, body) == [], (path, sorted(body))
    # The same bodies on v1 (the SDK's default) would be refused: the check can fail.
    v1 = protos.contract("v1")
    assert v1 is not None
    for _, body in bodies:
        missing = {name for name, _ in v1.unknown_names(REQUEST, body)}
        expected = {"systemInstruction"} & set(body)
        expected |= {"responseMimeType"} & set(body.get("generationConfig", {}))
        assert missing == expected, (missing, expected)
    assert sum(1 for _, body in bodies if v1.unknown_names(REQUEST, body)) > len(bodies) / 2


def test_on_v1_a_contract_keeping_server_refuses_the_apps_requests(
    standin_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What every call met before the version was pinned, now that the stand-in keeps to it.
    monkeypatch.setattr(gemini_llm, "API_VERSION", "v1")
    chat = GeminiChat("gemini-2.5-flash", api_key=GEMINI_KEY,
                      base_url=standin_env["GEMINI_BASE_URL"], timeout=20)
    with pytest.raises(ProviderError, match=r'Unknown name \\?"systemInstruction\\?"'):
        chat.complete([Message("system", "Be brief."), Message("user", "Say OK.")])
    # A plain message is valid on v1, which is why "Test connection" said the key worked.
    assert chat.complete([Message("user", "Say OK.")]).text


def test_test_connection_and_the_structured_call_go_to_the_pinned_version(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    ok, message = check_llm("gemini", "gemini-2.5-flash", standin_env)
    assert ok, message
    config = build_config(env=standin_env, provider="gemini", model="gemini-2.5-flash")
    chat = GeminiChat(config.model, api_key=GEMINI_KEY, base_url=config.gemini_base_url)
    chat.complete([Message("system", "Plan."), Message("user", "Plan it.")],
                  json_schema={"title": "Ping", "type": "object",
                               "properties": {"ok": {"type": "boolean"}}})
    paths = [path for path, _ in _gemini_bodies(standin)]
    assert len(paths) == 2 and all(_version(p) == "v1beta" for p in paths), paths


def test_the_deep_research_engine_calls_the_interactions_api_on_the_pinned_version(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    from research.core.config import Credentials
    from research.engines.gemini_deep import GeminiDeepResearch

    config = build_config(env=standin_env, engine="gemini-deep-research")
    engine = GeminiDeepResearch(config.gemini_deep_research_agent, config,
                                Credentials.from_env(standin_env))
    job = engine.create("How is heat pump adoption changing in Europe?")
    engine.retrieve(job.id)
    paths = [r["path"] for r in standin.requests_for("gemini_interactions")]
    assert len(paths) == 2 and all(p.startswith("/v1beta/interactions") for p in paths), paths
