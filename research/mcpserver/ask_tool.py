"""The MCP tool "ask_report" (issue 35, point 5): a finished run's report asked a question.

Answered only from the run's own sources, cited with the report's numbers, checked like the
report and kept with the run (research.ask); the person's own runs only (another's reads as no
run). A plain blocking function, as service.py's: server.py runs it in a worker thread.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from research.ask import ask
from research.core.prompts import strip_control
from research.mcpserver.service import Service


class CitedSource(BaseModel):
    number: int = Field(description="the source's number in the report and in the answer")
    title: str
    url: str


class AskedAnswer(BaseModel):
    run_id: str
    question: str
    answer: str = Field(description="Markdown; [n] are the report's own source numbers")
    answered: bool = Field(description="false: the run's sources don't say (what they say "
                                       "nearby follows); start_research on the question "
                                       "researches it")
    checks: str = Field(description="how many of the answer's claims were checked, and how")
    sources: list[CitedSource]


def ask_report(service: Service, run_id: str, question: str,
               person: str | None) -> AskedAnswer:
    answer = ask(service.store, run_id, question, credentials=service.credentials,
                 person=person, prices=service.prices)
    return AskedAnswer(
        run_id=run_id, question=strip_control(answer.question),
        answer=strip_control(answer.text), answered=answer.answered,
        checks=answer.check_line,
        sources=[CitedSource(number=s.number, title=strip_control(s.title), url=s.url)
                 for s in answer.sources])
