"""Structured answers as real models send them (issue 32, point 4).

Every JSON-answer role's model is read from valid answers whose free-text fields hold texts
real research systems wrote (long, multilingual, Markdown, links, quotes; ../shared/real-outputs,
skipped when absent) and in the shapes models really send: extra keys, nulls for "nothing
here", numbers as strings, the object wrapped in a list, a fence inside a fence, raw line
breaks inside strings. Each is read as meant; then complete runs whose every structured answer
has such a shape end completed, naming no exception, citing only gathered sources.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from research.llm.answer_limits import validate_capped
from research.llm.repair import schema_of
from research.phases.decide.goal import GoalCheck
from research.phases.decide.rounds import RoundAssessment
from research.phases.gather.findings import OpenQuestions, SubtopicFindings
from research.phases.gather.scoring import RelevanceScores
from research.phases.gather.searching import SearchQueries
from research.phases.start.clarify import ClarifyingQuestions
from research.phases.start.plan import ResearchPlan
from research.phases.start.preflight import Ping
from research.phases.verify.critic import CriticVerdicts
from research.phases.verify.judge import ClaimVerdicts
from research.phases.verify.rewrite import ClaimRewrites
from research.phases.writing.deliver import ReportLabels, Translations
from research.phases.writing.review import ReviewResult
from tests import real_outputs
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.brain import _resolve

pytestmark = pytest.mark.skipif(not real_outputs.available(),
                                reason="../shared/real-outputs is not on this machine")

ANSWER_MODELS: list[type[BaseModel]] = [
    ClarifyingQuestions, ResearchPlan, SearchQueries, RelevanceScores, SubtopicFindings,
    OpenQuestions, RoundAssessment, GoalCheck, ReviewResult, ClaimVerdicts, CriticVerdicts,
    ClaimRewrites, ReportLabels, Translations, Ping,
]


def rich_instance(node: Any, root: dict, depth: int = 0) -> Any:
    """A valid value with every field present and two items in each list."""
    from tests.standin.brain import minimal_instance

    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > 10:
        return None
    for key in ("anyOf", "oneOf"):
        if node.get(key):
            options = [_resolve(o, root) for o in node[key]]
            node = next((o for o in options if o.get("type") != "null"), options[0])
    if node.get("type") == "object" or "properties" in node:
        props = node.get("properties", {})
        return {name: rich_instance(sub, root, depth + 1) for name, sub in props.items()}
    if node.get("type") == "array":
        count = max(2, int(node.get("minItems", 0)))
        if "maxItems" in node:
            count = min(count, int(node["maxItems"]))
        return [rich_instance(node.get("items", {}), root, depth + 1) for _ in range(count)]
    if node.get("type") == "object" and "additionalProperties" in node:
        return {"a": rich_instance(node["additionalProperties"], root, depth + 1)}
    return minimal_instance(node, root, depth)


@pytest.mark.parametrize("shape", real_outputs.SHAPES)
@pytest.mark.parametrize("model", ANSWER_MODELS, ids=lambda m: m.__name__)
def test_every_answer_model_reads_valid_answers_in_the_shapes_models_send(
    model: type[BaseModel], shape: str,
) -> None:
    items = real_outputs.texts()
    texts = iter(items[i % len(items)].text for i in range(10_000))
    schema = schema_of(model)
    value = rich_instance(schema, schema)
    value = real_outputs.fill_texts(value, schema, schema, lambda: next(texts))
    answer = real_outputs.reshape(shape, value, schema, schema)
    read = validate_capped(model, answer, {}, "The test model")
    if shape == "nulls":  # a field sent as null takes its default
        value = _drop_nulls(real_outputs._nulls_for_defaults(value, schema, schema))
    assert read == model.model_validate(value)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("shape", ["texts", "nulls", "numbers_as_strings", "wrapped_in_a_list",
                                   "nested_fences", "control_characters", "extra_keys"])
def test_complete_runs_whose_every_structured_answer_has_that_shape_complete(
    standin: StandinServer, runs: Runner, shape: str,
) -> None:
    script = real_outputs.StructuredScript(real_outputs.texts(), shape)
    standin.script = script.answer
    store, run_id = runs(preset="quick", review_cycles=1, include_academic_sources=False,
                         search_other_side=False, searches_per_subtopic=1, sources_per_subtopic=5)
    figures = real_outputs.figures_of(store, run_id, [])
    assert figures.status == "completed", figures.error
    assert not figures.unexpected and not figures.unresolved, (figures.warnings, figures.unresolved)
    assert {"ResearchPlan", "SubtopicFindings", "ReviewResult"} <= set(script.answered), script.answered
