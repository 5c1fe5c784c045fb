"""Roles and the rule of who may call whom (SPEC "Agents and who may call whom").

Only the lead delegates. Workers, writers, reviewers, verifiers and critics exist only
inside an active research workflow and only because the lead asked for them. Breaking a
rule raises DelegationError naming the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from research.core.errors import DelegationError
from research.llm.base import RoleLLM


class Role(StrEnum):
    LEAD = "lead"
    WORKER = "worker"
    WRITER = "writer"
    REVIEWER = "reviewer"
    VERIFIER = "verifier"
    AUDITOR = "auditor"      # the second, independent verification pass
    CRITIC = "critic"


_TOKEN = object()


class Workflow:
    """One research run's team. Agents can only be made through its lead."""

    def __init__(self, run_id: str, make_llm: Callable[[Role], RoleLLM]) -> None:
        self.run_id = run_id
        self._make_llm = make_llm
        self.active = False
        self._lead: Agent | None = None

    def __enter__(self) -> Workflow:
        self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.active = False

    def lead(self) -> Agent:
        if not self.active:
            raise DelegationError(
                "The lead can only act inside a running research workflow."
            )
        if self._lead is None:
            self._lead = Agent(Role.LEAD, self, self._make_llm(Role.LEAD), _token=_TOKEN)
        return self._lead


class Agent:
    def __init__(
        self, role: Role, workflow: Workflow, llm: RoleLLM, *, _token: object = None
    ) -> None:
        if _token is not _TOKEN:
            raise DelegationError(
                f"A {role} cannot be started directly: agents are created by the lead "
                "inside a research workflow."
            )
        self.role = role
        self.workflow = workflow
        self.llm = llm

    def delegate(self, role: Role) -> Agent:
        """Start a team member for a task. Only the lead may, and only while the run is on."""
        if self.role is not Role.LEAD:
            raise DelegationError(
                f"Only the lead may delegate: the {self.role} tried to start a {role}."
            )
        if role is Role.LEAD:
            raise DelegationError("The lead cannot start another lead.")
        if not self.workflow.active:
            raise DelegationError(
                f"A {role} can only work inside a running research workflow; this one has ended."
            )
        return Agent(role, self.workflow, self.workflow._make_llm(role), _token=_TOKEN)
