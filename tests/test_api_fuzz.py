"""The OpenAPI document fuzzed with Schemathesis against the real server: for every operation,
generated requests (valid and invalid) must never get a 500, and every answer must match the
document (its status codes, content types and response schemas).

The server has no provider keys, so a generated valid start is refused after the full check
of its settings (422, naming the key to set) instead of starting research; examples are
limited so the test stays well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.api_server import ApiServer, Token

if TYPE_CHECKING:
    import schemathesis

EXAMPLES = 6


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, Token]]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    env = {"DEEP_RESEARCH_DB": str(folder / "research.db"),
           "DEEP_RESEARCH_API_REQUESTS_PER_MINUTE": "100000"}
    server = ApiServer.start(env, folder)
    try:
        yield server, server.quick_token("fuzz@example.com")
    finally:
        server.stop()


def test_no_request_gets_a_500_or_an_answer_the_document_does_not_describe(
        fuzzed: tuple[ApiServer, Token]) -> None:
    # Every operation in turn, through Schemathesis's own strategies (its pytest plugin does
    # not load on pytest 9); each operation's first failure is kept with its reproduction.
    # Schemathesis and Hypothesis are imported here, not at collection (every xdist worker
    # collects every module; only one runs this test).
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance]
    server, token = fuzzed
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    failures: list[str] = []
    operations = 0
    for found in schema.get_all_operations():
        operation = found.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=server.url, headers=token.headers, timeout=30,
                                   checks=checks)

        try:
            check()
        except Exception as exc:  # noqa: BLE001 - collected, then reported together
            failures.append(f"{operation.label}: {exc}")
    assert operations >= 20
    assert not failures, "\n\n".join(failures)
