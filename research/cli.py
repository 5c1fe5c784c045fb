"""`python -m research "question" ...`: the same engine and store as the dashboard."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from research import answer_clarification, approve_plan, pending_clarification, resume
from research.config import Credentials, ResearchConfig, build_config
from research.documents import ingest_paths
from research.documents.choice import with_sources
from research.errors import ResearchError, redact
from research.events import Event
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from research.llm.pricing import PriceTable
from research.phases.preflight import check_configuration
from research.pipeline import create_run, execute
from research.progress import percent
from research.related import dig_deeper_question, report_sections, section_text
from research.search.documents import check_scope
from research.settings import effective_env, prices_path
from storage import Store, default_db_path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WAITING, EXIT_CANCELLED = 0, 1, 2, 3, 130


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m research",
        description="Research a question on the web and write a cited report.",
    )
    p.add_argument("question", nargs="?", help="the research question, in quotes")
    p.add_argument("--preset", choices=["quick", "standard", "deep", "exhaustive"])
    p.add_argument("--subtopics", type=int, help="subtopic count (3-10)")
    p.add_argument("--sources", type=int, help="sources per subtopic (5-50)")
    p.add_argument("--reviews", type=int, help="review cycles (0-5)")
    p.add_argument("--format", choices=["md", "pdf"], default="md")
    p.add_argument("--out", type=Path, help="where to write the report (default: ./report-<run id>.<format>)")
    p.add_argument("--language", help="language of the report, e.g. German (default English)")
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="stop research when the estimated cost reaches this many US dollars")
    p.add_argument("--clarify", action="store_true",
                   help="answer 1-3 clarifying questions before research starts")
    p.add_argument("--answer", action="append", default=[], metavar="TEXT",
                   help="an answer to a clarifying question (repeat for each question)")
    p.add_argument("--engine", choices=["pipeline", "openai-deep-research", "gemini-deep-research", "all"],
                   help="who researches: the built-in team (default), a hosted deep-research "
                        "service, or all of them side by side")
    p.add_argument("--build-on", metavar="RUN_ID",
                   help="start from the sources of an earlier run")
    p.add_argument("--dig-deeper", nargs=2, metavar=("RUN_ID", "SECTION"),
                   help="a follow-up run that goes deeper into one section of an earlier report")
    p.add_argument("--review-plan", action="store_true",
                   help="show the plan and wait for your approval before research starts")
    p.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted or waiting run")
    p.add_argument("--approve-plan", action="store_true",
                   help="with --resume: start research with the plan as it is")
    p.add_argument("--docs", nargs="+", type=Path, metavar="FILE_OR_FOLDER",
                   help="add these files (PDF, DOCX, Markdown, text, HTML; folders are read "
                        "through) to the document library and research them too")
    p.add_argument("--collection", metavar="NAME",
                   help="research the documents of this collection (with --docs: add the "
                        "files to it)")
    p.add_argument("--no-web", action="store_true",
                   help="leave the web out: research only your documents (no search key needed)")
    p.add_argument("--db", type=Path, help="database file (default: DEEP_RESEARCH_DB or data/research.db)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    env = effective_env()
    credentials = Credentials.from_env(env)
    secrets = credentials.secrets()
    try:
        store = Store(args.db or default_db_path(env), secrets=secrets)
    except Exception as exc:  # noqa: BLE001 - any failure to open the file is a user-facing error
        return _fail(f"Could not open the database: {exc}", secrets, EXIT_FAILED)
    printer = _Printer(store, quiet=args.quiet)
    try:
        prices = PriceTable.load(prices_path(env))
        if args.resume:
            run = store.get_run(args.resume)
            if run is None:
                raise ResearchError(f"There is no run with id {args.resume!r}.")
            check_configuration(ResearchConfig(**run["config"]), credentials)
            print(f"Resuming run {args.resume}", file=sys.stderr)
            run = resume(args.resume, store=store, credentials=credentials,
                         on_event=printer, prices=prices)
            run_id = args.resume
        else:
            parent = args.build_on
            if args.dig_deeper:
                parent, section = args.dig_deeper
                args.question = _dig_deeper_question(store, parent, section)
            if parent and store.get_run(parent) is None:
                raise ResearchError(f"There is no run with id {parent!r} to build on.")
            if not args.question:
                return _fail("Please give a research question, e.g. "
                             'python -m research "How do heat pumps perform in cold climates?"',
                             secrets, EXIT_USAGE)
            config = build_config(
                env=env, preset=args.preset, SUBTOPIC_COUNT=args.subtopics,
                SOURCES_PER_SUBTOPIC=args.sources, REVIEW_CYCLES=args.reviews,
                REQUIRE_CLARIFICATION=True if args.clarify else None,
                report_language=args.language, max_cost_usd=args.max_cost,
                review_plan=True if args.review_plan else None, engine=args.engine,
            )
            if args.docs or args.collection or args.no_web:
                config = _documents_config(store, config, args)
            check_configuration(config, credentials)
            run_id = create_run(store, args.question, config, parent_run_id=parent)
            print(f"Run id: {run_id}", file=sys.stderr)
            run = execute(run_id, store=store, credentials=credentials, on_event=printer,
                          prices=prices)
        while run.get("status") == "waiting":
            if not _answer_waiting(store, run_id, args):
                return _fail(_waiting_message(store, run_id), secrets, EXIT_WAITING)
            run = execute(run_id, store=store, credentials=credentials, on_event=printer,
                          prices=prices)
    except ResearchError as exc:
        return _fail(str(exc), secrets, EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("Stopped. Resume later with --resume RUN_ID.", secrets, EXIT_CANCELLED)
    if run.get("status") == "cancelled":
        return _fail(f"Run {run_id} was cancelled.", secrets, EXIT_CANCELLED)
    if run.get("status") != "completed":
        return _fail(f"Run {run_id} failed: {run.get('error') or 'unknown error'} "
                     f"(resume with --resume {run_id})", secrets, EXIT_FAILED)
    out = args.out or Path(f"report-{run_id}.{args.format}")
    try:
        doc = build_document_for_run(store, run_id)
        if args.format == "pdf":
            out.write_bytes(to_pdf(doc))
        else:
            out.write_text(to_markdown(doc), encoding="utf-8")
    except (ResearchError, OSError) as exc:
        return _fail(f"The research finished but the report could not be saved to {out}: {exc}",
                     secrets, EXIT_FAILED)
    totals = run.get("totals") or {}
    print(f"Report written to {out} ({totals.get('sources', 0)} sources, "
          f"~${totals.get('cost_usd', 0):.4f}).", file=sys.stderr)
    warnings = [str(w) for w in run.get("warnings") or []]
    if warnings:  # still a completed run (exit 0), but never shown as a plain success
        print(f"Completed with warnings ({len(warnings)}):", file=sys.stderr)
        for warning in warnings:
            print(f"  Warning: {redact(warning, secrets)}", file=sys.stderr)
    print(run_id)
    return EXIT_OK


def _documents_config(store: Store, config: ResearchConfig,
                      args: argparse.Namespace) -> ResearchConfig:
    """Ingest --docs (each bad file named, the rest kept) and read the chosen documents."""
    added: list[str] = []
    for result in ingest_paths(store, args.docs or [], collection=args.collection):
        print(f"{'Added' if result.ok else 'Skipped'} {result.filename}: {result.message}",
              file=sys.stderr)
        if result.ok and result.document_id:
            added.append(result.document_id)
    if args.docs and not added:
        raise ResearchError("None of the files given with --docs could be used (see above).")
    config = with_sources(config, "documents" if args.no_web else "both",
                          collection=args.collection or "",
                          document_ids=[] if args.collection else added)
    check_scope(store, config)
    return config


def _dig_deeper_question(store: Store, parent: str, section: str) -> str:
    run = store.get_run(parent)
    report = store.get_report(parent)
    if run is None or report is None:
        raise ResearchError(f"Run {parent} has no finished report to dig deeper into.")
    sections = report_sections(report["markdown"])
    if section not in sections:
        raise ResearchError(f"The report has no section {section!r}; its sections are: "
                            + ", ".join(sections) + ".")
    return dig_deeper_question(run["question"], section, section_text(report["markdown"], section))


def _answer_waiting(store: Store, run_id: str, args: argparse.Namespace) -> bool:
    """Give a waiting run what it waits for, from flags or by asking. False: cannot."""
    asked = pending_clarification(store, run_id)
    interactive = sys.stdin.isatty()
    if asked:
        if args.answer:
            answer_clarification(store, run_id, args.answer)
            args.answer = []
            return True
        if not interactive:
            return False
        print("Before starting, a few questions (press Enter to skip one):", file=sys.stderr)
        answers = [input(f"{i}. {q}\n> ") for i, q in enumerate(asked["questions"], start=1)]
        answer_clarification(store, run_id, answers)
        return True
    plan = store.get_plan(run_id) or []
    if args.approve_plan:
        approve_plan(store, run_id)
        return True
    if not interactive:
        return False
    print(_plan_text(plan), file=sys.stderr)
    reply = input("Start research with this plan? [Y/n] ").strip().lower()
    if reply in ("", "y", "yes"):
        approve_plan(store, run_id)
        return True
    return False


def _plan_text(plan: list[dict]) -> str:
    lines = ["The plan:"]
    for i, sub in enumerate(plan, start=1):
        lines.append(f"  {i}. {sub['title']}")
        lines += [f"       - {q}" for q in sub.get("questions", [])]
    return "\n".join(lines)


def _waiting_message(store: Store, run_id: str) -> str:
    asked = pending_clarification(store, run_id)
    if asked:
        listed = " ".join(f"({i}) {q}" for i, q in enumerate(asked["questions"], start=1))
        return (f"Run {run_id} needs your answers first: {listed} Continue with: "
                f"python -m research --resume {run_id} --answer \"...\" (once per question).")
    return (f"Run {run_id} waits for you to review its plan (in the dashboard, or continue "
            f"as planned with: python -m research --resume {run_id} --approve-plan).")


def _fail(message: str, secrets: list[str], code: int) -> int:
    print(f"error: {redact(message, secrets)}", file=sys.stderr)
    return code


class _Printer:
    """Progress lines on stderr: time, percent and the event's message."""

    def __init__(self, store: Store, *, quiet: bool) -> None:
        self.store = store
        self.quiet = quiet
        self.started = time.monotonic()

    def __call__(self, event: Event) -> None:
        if self.quiet or event.type in ("source_found",):
            return
        run = self.store.get_run(event.run_id) or {}
        pct = percent(run, self.store.get_steps(event.run_id))
        elapsed = int(time.monotonic() - self.started)
        print(f"[{elapsed // 60:02d}:{elapsed % 60:02d} {pct:3d}%] {event.message}",
              file=sys.stderr, flush=True)
