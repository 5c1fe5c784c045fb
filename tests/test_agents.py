"""Delegation rules: only the lead delegates, and only inside a running workflow."""

from __future__ import annotations

import pytest

from research.core.agents import Agent, Role, Workflow
from research.core.errors import DelegationError
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Completion, Usage


class _Echo:
    provider, model = "fake", "fake-1"

    def complete(self, messages, *, json_schema=None, schema_name=None, timeout=None):  # type: ignore[no-untyped-def]
        return Completion("ok", Usage(1, 1), self.provider, self.model)


def _workflow() -> Workflow:
    meter = UsageMeter()
    return Workflow("run1", lambda role: RoleLLM(_Echo(), role.value, meter))


def test_lead_delegates_to_every_other_role_inside_a_workflow() -> None:
    with _workflow() as wf:
        lead = wf.lead()
        for role in Role:
            if role is not Role.LEAD:
                assert lead.delegate(role).role is role


def test_a_worker_cannot_delegate() -> None:
    with _workflow() as wf:
        worker = wf.lead().delegate(Role.WORKER)
        with pytest.raises(DelegationError, match="Only the lead may delegate: the worker tried to start a reviewer"):
            worker.delegate(Role.REVIEWER)


def test_agents_cannot_be_started_directly() -> None:
    wf = _workflow()
    with pytest.raises(DelegationError, match="created by the lead"):
        Agent(Role.WORKER, wf, RoleLLM(_Echo(), "worker", UsageMeter()))


def test_no_delegation_outside_a_running_workflow() -> None:
    wf = _workflow()
    with pytest.raises(DelegationError, match="inside a running research workflow"):
        wf.lead()
    with wf:
        lead = wf.lead()
    with pytest.raises(DelegationError, match="has ended"):
        lead.delegate(Role.REVIEWER)


def test_the_lead_cannot_start_another_lead() -> None:
    with _workflow() as wf, pytest.raises(DelegationError, match="another lead"):
        wf.lead().delegate(Role.LEAD)
