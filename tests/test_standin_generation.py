"""The stand-in's generation time and report length (for the latency benchmark, issue 11)."""

from __future__ import annotations

from openai import OpenAI

from tests.standin import StandinServer
from tests.standin.brain import lengthen

WRITER = ("Write the report.\nAt most 3000 words.\nSOURCES (cite by number):\n"
          "[1] A study — https://a.example/1\n[2] B report — https://b.example/2")


def test_answer_time_grows_with_its_tokens_and_is_logged(standin: StandinServer,
                                                         standin_env: dict[str, str]) -> None:
    standin.set_latency(tokens_per_second=40)
    assert standin.generation_time(80) == 2.0 and standin.generation_time(0) == 0.0
    standin.set_latency(tokens_per_second=100_000)  # fast, the test only reads the log
    standin.set_answer_words(600)
    client = OpenAI(base_url=standin_env["OPENAI_BASE_URL"], api_key="sk-test")
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": WRITER}])
    text = answer.choices[0].message.content or ""
    assert 600 <= len(text.split()) < 700  # the report length asked of the writer
    entry = standin.requests_for("openai")[-1]
    assert entry["completion_tokens"] == answer.usage.completion_tokens  # type: ignore[union-attr]
    assert entry["answered"] >= entry["time"]
    standin.reset()
    assert standin.generation_time(1000) == 0.0 and standin.answer_words == 0


def test_a_section_gets_its_share_of_the_report_length() -> None:
    part = "## Key findings\n\nOne finding [1]."
    whole = lengthen(part, "At most 300 words (of a report of at most 3000 words).", 1500)
    assert 150 <= len(whole.split()) < 165  # 1500 * 300 / 3000
    assert lengthen(part, "At most 300 words", 0) == part  # no length asked: as written
    assert all("[" in line for line in whole.splitlines() if line and not line.startswith("#"))
