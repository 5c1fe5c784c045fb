"""Typed progress events: the one channel from the engine to the store, CLI and UI.

Each event is a frozen dataclass: the fields every event has (`run_id`, a human-readable
`message`, the `step` key it belongs to, its `ts`) and the typed fields of its own kind (a
kept source carries its id, URL, title and relevance; a step its kind and label). `TYPE` is
the name SPEC uses in the event log. Subscribers receive events through a plain callback; the
engine never knows who listens.

The event log stores an event as a row `{type, run_id, ts, step, message, data}` where `data`
holds the event's own fields (`Event.to_dict`; a field left at its default is not written).
`from_row` is the one way back from a stored row to a typed event: it accepts rows written by
older versions (fields missing, renamed payload keys absent, an unknown type), so old
databases still display.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from types import UnionType
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from pydantic import TypeAdapter, ValidationError

from storage.run_records import EventRow, JsonObject

log = logging.getLogger(__name__)

# An event's own fields as JSON values, by name: the event log's `data` column and the row
# around it (`to_dict`), or field values on their way into a typed event (`_validated`). The
# one untyped shape here: it is the JSON edge where events are stored and read back.
Payload = dict[str, Any]


def utc_now() -> str:
    """UTC ISO-8601 timestamp with a trailing Z, as stored in the event log."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Event:
    TYPE: ClassVar[str] = "event"
    run_id: str
    message: str = ""
    step: str | None = None  # the key of the step the event belongs to, e.g. "research:t1"
    ts: str = field(default_factory=utc_now)

    @property
    def type(self) -> str:
        return self.TYPE

    def payload(self) -> Payload:
        """This kind's own fields that differ from their defaults (JSON-ready): the row's
        `data`. Defaults are left out so rows stay small and read back the same."""
        own = {}
        for f in fields(self):
            if f.name in _BASE_FIELDS:
                continue
            value = getattr(self, f.name)
            if f.default is not MISSING and value == f.default:
                continue
            own[f.name] = _plain(value)
        return own

    def to_dict(self) -> Payload:
        """The event-log row (what `Store.append_event` writes)."""
        return {"type": self.type, "run_id": self.run_id, "ts": self.ts, "step": self.step,
                "message": self.message, "data": self.payload()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


_BASE_FIELDS = frozenset(f.name for f in fields(Event))


def _plain(value: Any) -> Any:
    """A field value as JSON data (a nested record becomes a mapping, a tuple a list)."""
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True, kw_only=True)  # own fields after the defaulted base ones
class Initiated(Event):
    TYPE: ClassVar[str] = "initiated"


@dataclass(frozen=True, kw_only=True)
class PlanCreated(Event):
    TYPE: ClassVar[str] = "plan_created"
    subtopics: tuple[str, ...] = ()  # their titles


@dataclass(frozen=True, kw_only=True)
class StepStarted(Event):
    TYPE: ClassVar[str] = "step_started"
    kind: str = ""
    label: str = ""
    attempt: int = 1
    engine: str | None = None  # a hosted engine's step
    remote_id: str | None = None  # the hosted job re-attached to


@dataclass(frozen=True, kw_only=True)
class StepCompleted(Event):
    TYPE: ClassVar[str] = "step_completed"
    kind: str = ""
    label: str = ""
    duration_s: float | None = None
    sources: int | None = None  # sources kept by a research or engine step
    new_sources: int | None = None  # of those, new to the run (a hosted engine)
    remote_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class StepFailed(Event):
    TYPE: ClassVar[str] = "step_failed"
    kind: str = ""
    label: str = ""
    error: str = ""
    attempt: int = 1
    final: bool = True  # False: the step is tried again


@dataclass(frozen=True, kw_only=True)
class SourceFound(Event):
    TYPE: ClassVar[str] = "source_found"
    source_id: str = ""
    url: str = ""
    title: str = ""
    relevance: float | None = None
    subtopic_id: str = ""


@dataclass(frozen=True, kw_only=True)
class SourceSkipped(Event):
    """A page refused or failed (unsafe address, timeout, wrong type...)."""
    TYPE: ClassVar[str] = "source_skipped"
    url: str = ""
    reason: str = ""
    subtopic_id: str = ""


@dataclass(frozen=True, kw_only=True)
class SearchFailed(Event):
    TYPE: ClassVar[str] = "search_failed"
    provider: str = ""
    query: str = ""
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Retrying(Event):
    TYPE: ClassVar[str] = "retrying"
    attempt: int | None = None  # the attempt that failed
    delay_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class LimitWait(Event):
    """Requests wait for the model account's rate limit: one per wait episode per account
    (research.llm.pacing), not one per request or retry. A wait, not a failure."""
    TYPE: ClassVar[str] = "limit_wait"
    provider: str = ""
    model: str = ""
    wait_s: float | None = None  # the first request's expected wait


@dataclass(frozen=True, kw_only=True)
class RoundCompleted(Event):
    """A research round was assessed: coverage, follow-up triage, and whether to go on."""
    TYPE: ClassVar[str] = "round_completed"
    round: int = 0
    filter: int = 0  # follow-up questions filtered out
    answer: int = 0  # answered by a quick lookup
    escalate: int = 0  # escalated to a new subtopic
    stop_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class DraftStarted(Event):
    TYPE: ClassVar[str] = "draft_started"
    sources: int | None = None  # what a first draft is written from
    revising: int | None = None  # the draft version being revised


@dataclass(frozen=True, kw_only=True)
class DraftCompleted(Event):
    """A draft was saved: written, revised, or verified (then with the verification counts)."""
    TYPE: ClassVar[str] = "draft_completed"
    version: int = 0
    words: int | None = None
    citations_converted: int = 0
    citations_removed: int = 0
    claims: int | None = None
    supported: int | None = None
    share_supported: float | None = None
    unsupported_removed: int | None = None
    rewritten: int | None = None
    single_source: int | None = None
    unchecked: int | None = None
    uncited: int | None = None
    incomplete: bool | None = None


@dataclass(frozen=True)
class IssueCounts:
    high: int = 0
    medium: int = 0
    low: int = 0


@dataclass(frozen=True, kw_only=True)
class ReviewCycle(Event):
    TYPE: ClassVar[str] = "review_cycle"
    cycle: int = 0
    approved: bool = False
    issues: IssueCounts = field(default_factory=IssueCounts)
    checks_passed: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Completed(Event):
    TYPE: ClassVar[str] = "completed"
    warnings: int = 0


@dataclass(frozen=True, kw_only=True)
class Error(Event):
    TYPE: ClassVar[str] = "error"


@dataclass(frozen=True, kw_only=True)
class Warning(Event):  # noqa: A001 - an event name, not the builtin
    TYPE: ClassVar[str] = "warning"
    count_note: bool = False  # fewer items than asked for: deliver copies it into the report
    got: int | None = None
    asked: int | None = None
    detail: str = ""  # what went wrong, for the log (a traceback): never shown as the message


@dataclass(frozen=True, kw_only=True)
class Cancelled(Event):
    TYPE: ClassVar[str] = "cancelled"


@dataclass(frozen=True, kw_only=True)
class Paused(Event):
    TYPE: ClassVar[str] = "paused"


@dataclass(frozen=True, kw_only=True)
class Waiting(Event):
    """The run waits for the person: clarifying answers or a plan review."""
    TYPE: ClassVar[str] = "waiting"


@dataclass(frozen=True, kw_only=True)
class Resumed(Event):
    TYPE: ClassVar[str] = "resumed"


@dataclass(frozen=True, kw_only=True)
class Other(Event):
    """A stored row of a type this version does not know (written by a newer or older
    version, or by hand): shown as it was stored."""
    TYPE: ClassVar[str] = "other"
    stored_type: str = ""
    data: Payload = field(default_factory=dict)  # the row's payload, kept as stored

    @property
    def type(self) -> str:
        return self.stored_type or self.TYPE

    def payload(self) -> Payload:
        return dict(self.data)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (Initiated, PlanCreated, StepStarted, StepCompleted, StepFailed, SourceFound,
                SourceSkipped, SearchFailed, Retrying, LimitWait, RoundCompleted, DraftStarted, DraftCompleted, ReviewCycle,
                Completed, Error, Warning, Cancelled, Paused, Waiting, Resumed)
}


# -- back from the event log ------------------------------------------------------------------

def from_row(row: EventRow | JsonObject) -> Event:
    """A stored event-log row (as the Store returns it, or raw: `Event.to_dict()`, JSON) as its
    typed event.

    Tolerant by design, since rows outlive versions: a missing field takes its default, a
    payload key this kind does not declare is ignored, a value of the wrong type is dropped
    (the field takes its default), and an unknown type becomes `Other`.
    """
    if isinstance(row, EventRow):
        return _typed(row.type, row.run_id, row.message, row.step, row.ts, row.data)
    # A raw row (a JSON edge: to_dict(), JSON text, a hand-written row): any key may be missing.
    data = _payload(row.get("data"))
    step = None if row.get("step") is None else str(row.get("step"))
    return _typed(str(row.get("type") or ""), str(row.get("run_id") or ""),
                  str(row.get("message") or ""), step, str(row.get("ts") or ""), data)


def _typed(stored_type: str, run_id: str, message: str, step: str | None, ts: str,
           data: JsonObject) -> Event:
    cls = EVENT_TYPES.get(stored_type)
    if cls is None:
        return Other(run_id, message, step, ts, stored_type=stored_type, data=dict(data))
    own = {name: data[name] for name in _OWN_FIELDS[cls] if name in data}
    return _validated(cls, {"run_id": run_id, "message": message, "step": step, "ts": ts, **own})


def from_json(text: str) -> Event:
    """`from_row` for a row serialised with `Event.to_json`."""
    row = json.loads(text)
    return from_row(row if isinstance(row, Mapping) else {})


def _payload(data: Any) -> Payload:
    """The row's `data` as a mapping: stored decoded, as JSON text, or absent."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return {}
    return dict(data) if isinstance(data, Mapping) else {}


def _adapter(cls: type[Event]) -> TypeAdapter[Any]:
    """Built on first need (a row whose values need coercing), kept per kind."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def _plain_types(cls: type[Event]) -> dict[str, tuple[type, ...]]:
    """Per field, the runtime types a stored value may have to be used as it is (scalars and
    None); anything else (a list for a tuple, a mapping for a record) goes through pydantic."""
    hints = get_type_hints(cls)
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in hints.items():
        args = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
        scalars = tuple(a for a in args if a in (str, int, float, bool, type(None)))
        if len(scalars) == len(args):
            out[name] = scalars
    return out


def _validated(cls: type[Event], values: Payload) -> Event:
    """`cls` from `values`, types checked and coerced (pydantic, lax: "3" -> 3); a value that
    cannot be one of its field's type is dropped, so its default applies. Rows whose values
    already have their field's type (nearly all) skip pydantic: the dashboard reads hundreds
    of rows per refresh."""
    plain = _PLAIN_TYPES[cls]
    if all(name in plain and type(value) in plain[name] for name, value in values.items()):
        return cls(**values)
    adapter = _adapter(cls)
    try:
        event: Event = adapter.validate_python(values)
        return event
    except ValidationError as exc:
        bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
    kept = {k: v for k, v in values.items() if k not in bad or k in _BASE_FIELDS}
    try:
        event = adapter.validate_python(kept)
    except ValidationError:
        event = cls(**{k: v for k, v in values.items() if k in _BASE_FIELDS})
    return event


_OWN_FIELDS = {cls: tuple(f.name for f in fields(cls) if f.name not in _BASE_FIELDS)
               for cls in EVENT_TYPES.values()}
_PLAIN_TYPES = {cls: _plain_types(cls) for cls in EVENT_TYPES.values()}
_ADAPTERS: dict[type[Event], TypeAdapter[Any]] = {}


# -- listeners --------------------------------------------------------------------------------

EventSink = Callable[[Event], None]


def fan_out(*sinks: EventSink) -> EventSink:
    """One sink that forwards to several. A failing listener must not stop the research,
    so its error is logged (with the listener and the event type) and the others still run."""

    def emit(event: Event) -> None:
        for sink in sinks:
            try:
                sink(event)
            except Exception:  # noqa: BLE001 - a broken listener must not break research
                log.exception("event listener %s failed on a %s event of run %s",
                              _name(sink), event.type, event.run_id)

    return emit


def _name(sink: EventSink) -> str:
    return getattr(sink, "__qualname__", None) or type(sink).__qualname__
