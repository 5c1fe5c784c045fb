"""`python -m research "question" ...`: the same engine and store as the dashboard."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from research import resume, voice
from research.core.config import Credentials, ResearchConfig, WorkerSettings, build_config
from research.core.errors import ResearchError, redact
from research.core.records import Run
from research.core.settings import command_owner, effective_env, prices_path
from research.documents import ingest_paths
from research.documents.choice import with_sources
from research.estimate import account_pace, estimate, estimate_line
from research.export.formats import FORMATS, export_run, file_stem
from research.living.hooks import after_run as tell
from research.living.settings import update_request
from research.llm.pricing import PriceTable
from research.phases.start.preflight import check_configuration
from research.pipeline import create_run
from research.related import dig_deeper_question, report_sections
from research.runs import liveness
from research.search.documents import check_scope
from research.terminal import Printer, answer_waiting, quiet_logging, say, waiting_message
from storage import (
    DISK_FULL_MESSAGE,
    TERMINAL_STATUSES,
    DatabaseUnavailableError,
    DatabaseValueError,
    Store,
    chosen_db,
    is_disk_full,
    redact_url,
)

if TYPE_CHECKING:
    from research.runs import Runs

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WAITING, EXIT_CANCELLED = 0, 1, 2, 3, 130
STALE_AFTER_S = 24 * 3600.0  # at start only dead owners count, not a slow heartbeat
MARK_TRIES, MARK_RETRY_S = 20, 0.25  # the interrupted mark on a full disk: ~5 s of tries


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
    p.add_argument("--schedule", choices=["rounds", "breadth-depth"],
                   help="rounds (follow-ups until nothing new remains) or breadth-depth (new "
                        "subtopics halve at each level)")
    p.add_argument("--breadth", type=int,
                   help="breadth-depth: new subtopics the first deeper level may add (1-10)")
    p.add_argument("--depth", type=int, help="breadth-depth: research levels (1-5)")
    p.add_argument("--format", choices=list(FORMATS), default="md",
                   help="md or pdf: the report; docx: Word; bib or ris: the cited sources; "
                        "csv or xlsx: the claim evidence table")
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
    p.add_argument("--done-when", metavar="TEXT", default="",
                   help="an exit case in plain words: research stops early once it is met")
    p.add_argument("--want", metavar="TEXT", default="",
                   help='the output you want, e.g. "a one-page brief" or "a comparison table"')
    p.add_argument("--steer", action="store_true",
                   help="stop after each round with the proposed next branches, numbered "
                        "(exit status 3); continue with --resume RUN_ID --follow 1,3")
    p.add_argument("--follow", metavar="N,N", default="",
                   help="with --resume: the proposed branches to follow, e.g. 1,3")
    p.add_argument("--add", action="append", default=[], metavar="TEXT",
                   help="with --resume: a branch of your own to explore next (repeatable)")
    p.add_argument("--enough", action="store_true",
                   help="with --resume: stop researching and write the report")
    p.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted or waiting run")
    p.add_argument("--update", metavar="RUN_ID",
                   help="update a finished run's report with what is new since it was written "
                        "(also: python -m research update RUN_ID); --max-cost caps the update")
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
    p.add_argument("--detach", action="store_true",
                   help="queue the run for a worker, print its id on the last line and exit")
    p.add_argument("--wait", metavar="RUN_ID",
                   help="wait for a queued run to stop, then write its report like a normal run")
    p.add_argument("--db", help="database file or postgresql:// URL (default: DEEP_RESEARCH_DB "
                                "or data/research.db); see also: python -m research db --help")
    p.add_argument("--owner", metavar="PERSON",
                   help="whose runs these are, as the dashboard's sign-in names them (their "
                        "e-mail): new runs belong to them, and --resume, --wait, --build-on "
                        "see only their runs (default: DEEP_RESEARCH_OWNER; unset: no owner, "
                        "every run)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["db"]:  # python -m research db upgrade | copy ...
        from research.db_command import main as db_main

        return db_main(argv[1:])
    if argv[:1] == ["ask"]:  # python -m research ask RUN_ID "question" (research.ask)
        from research.ask.command import main as ask_main

        return ask_main(argv[1:])
    if argv[:1] in (["serve"], ["token"]):  # the HTTP API and its tokens (research.api)
        from research.api.commands import main as api_main

        return api_main(argv)
    if argv[:1] == ["watch"]:  # python -m research watch RUN_ID | list | pause ... (issue 36)
        from research.living.watch_command import main as watch_main

        return watch_main(argv[1:])
    if argv[:1] in (["status"], ["list"]):  # a run's state, the runs (research/status_command.py)
        from research.status_command import main as status_main

        return status_main(argv[0], argv[1:])
    if argv[:1] == ["update"]:  # python -m research update RUN_ID (research/living)
        argv = ["--update", *argv[1:]]
    args = parser().parse_args(argv)
    quiet_logging()
    env = effective_env()
    credentials = Credentials.from_env(env)
    secrets = credentials.secrets()
    session = _Session()
    try:
        return _main(args, env, credentials, session)
    except KeyboardInterrupt:
        session.mark_interrupted("Stopped with Ctrl-C; everything gathered so far is kept.")
        return _fail(session.stopped_message(), secrets, EXIT_CANCELLED)
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        session.mark_interrupted(DISK_FULL_MESSAGE)
        return _fail(session.disk_full_message(), secrets, EXIT_FAILED)


class _Session:
    """What this CLI call has done so far, for a plain message when it is cut short."""

    def __init__(self) -> None:
        self.store: Store | None = None
        self.run_id: str | None = None
        self.writing: Path | None = None
        self.watching = False  # a worker executes the run; this process only watches it

    def stopped_message(self) -> str:
        if self.run_id is None:
            return "Stopped before a run was started; nothing was changed."
        if self.watching and self.writing is None:
            return (f"Stopped watching. Run {self.run_id} goes on with a worker; wait for it "
                    f"again with python -m research --wait {self.run_id}")
        if self.writing is not None:
            return (f"Stopped while writing {self.writing}; nothing was written there. Run "
                    f"{self.run_id} is complete and kept in the database: write the report again "
                    f"with python -m research --resume {self.run_id}")
        return (f"Stopped. Everything run {self.run_id} gathered so far is kept; continue with "
                f"python -m research --resume {self.run_id}")

    def disk_full_message(self) -> str:
        return DISK_FULL_MESSAGE.replace("RUN_ID", self.run_id or "RUN_ID")

    def mark_interrupted(self, why: str) -> None:
        """With the disk full this write may fail too (issue 40: in 3 of 5 tries the run
        stayed "running"): it is tried again for a few seconds, as space freed by the failed
        transaction's rollback or by another process often lets so small a write land. If it
        never does, the run is put right the next time it is opened (--resume continues a run
        left "running")."""
        if self.store is None or self.run_id is None or self.watching:
            return  # a worker's run is the worker's to stop (Cancel in the dashboard)
        for _ in range(MARK_TRIES):
            try:
                # A fresh connection: Ctrl-C may have landed inside a transaction of this
                # thread's connection, which closing rolls back.
                self.store.close()
                run = self.store.get_run(self.run_id)
                if run is not None and run.status not in TERMINAL_STATUSES:
                    self.store.set_run_status(self.run_id, "interrupted", error=why)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. the disk is full: tried again
                if not is_disk_full(exc):
                    return
            except BaseException:  # noqa: BLE001 - a second Ctrl-C: give up at once
                return
            time.sleep(MARK_RETRY_S)


def _put_right_abandoned(store: Store) -> None:
    """Before anything else: a run left "running" by a process of this machine that is gone
    (a full disk refused even its interrupted mark, a crash) is marked interrupted, with the
    reason, so --resume and the dashboard show what happened (issue 40, point 4). Other
    machines' runs are left to the dashboard's heartbeat rule."""
    try:
        liveness.put_right(store, stale_after_s=STALE_AFTER_S, dead_only=True)
    except Exception as exc:  # noqa: BLE001 - the disk may still be full: the next start tries
        if not is_disk_full(exc):
            raise


def _main(args: argparse.Namespace, env: dict[str, str], credentials: Credentials,
          session: _Session) -> int:
    secrets = credentials.secrets()
    try:
        db_path = chosen_db(args.db, env)
    except DatabaseValueError as exc:
        return _fail(str(exc), secrets, EXIT_USAGE)
    try:
        store = Store(db_path, secrets=secrets)
    except DatabaseUnavailableError as exc:
        return _fail(str(exc), secrets, EXIT_FAILED)
    except Exception as exc:  # noqa: BLE001 - any failure to open the file is a user-facing error
        if is_disk_full(exc):
            raise
        return _fail(f"Could not open the database: {redact_url(str(exc))}", secrets, EXIT_FAILED)
    session.store = store
    _put_right_abandoned(store)
    printer = Printer(store, quiet=args.quiet)
    owner = command_owner(args.owner, env)
    try:
        prices = PriceTable.load(prices_path(env))
        runs = _queued(args, env, db_path)
        queued = session.watching = runs is not None

        def go(run_id: str) -> Run | None:
            """Go on with the stored run (new, interrupted, answered) here, or queue it for a
            worker and watch it (--detach: queue only, None)."""
            if runs is None:
                ended = resume(run_id, store=store, credentials=credentials, on_event=printer,
                               prices=prices)
                tell(store, run_id, env)  # its person, outside the terminal (issue 36)
                return ended
            runs.resume(run_id, credentials)  # the workers' own keys are used, never these
            if args.detach:
                return None
            return runs.watch(run_id, say, quiet=args.quiet)

        run: Run | None
        if args.wait:
            run_id = session.run_id = args.wait
            assert runs is not None  # --wait always watches the queue
            run = runs.watch(run_id, say, quiet=args.quiet, person=owner)
        elif args.resume:
            found = store.get_run(args.resume, person=owner)
            if found is None:
                raise ResearchError(f"There is no run with id {args.resume!r}.")
            run, run_id = found, args.resume
            session.run_id = run_id
            if found.status != "completed":  # a completed run: write its report again
                if not queued:
                    check_configuration(ResearchConfig(**found.config), credentials)
                why = found.error if found.status == "interrupted" and found.error else ""
                say(f"Resuming run {args.resume}" + (f" (it was interrupted: {why})" if why else ""))
                run = go(run_id)
        elif args.update:
            earlier, config = update_request(store, args.update, person=owner,
                                             cost_cap=args.max_cost)
            if not queued:
                check_configuration(config, credentials)
            run_id = session.run_id = create_run(store, earlier.question, config,
                                                 parent_run_id=earlier.id, person=owner)
            say(f"Run id: {run_id} (an update of run {earlier.id}: what is new since "
                f"{config.update_since})")
            run = go(run_id)
        else:
            parent, section = args.build_on, None
            if args.dig_deeper:
                parent, section = args.dig_deeper
                args.question = follow_up_question(store, parent, section, owner)
            if parent and store.get_run(parent, person=owner) is None:
                raise ResearchError(f"There is no run with id {parent!r} to build on.")
            if not args.question:
                return _fail("Please give a research question, e.g. "
                             'python -m research "How do heat pumps perform in cold climates?"',
                             secrets, EXIT_USAGE)
            config = run_config(
                env, preset=args.preset, subtopics=args.subtopics, sources=args.sources,
                reviews=args.reviews, breadth=args.breadth, depth=args.depth,
                schedule=args.schedule, clarify=args.clarify, language=args.language,
                max_cost=args.max_cost, review_plan=args.review_plan, engine=args.engine,
                section=section, done_when=args.done_when, want=args.want, steer=args.steer)
            if args.docs or args.collection or args.no_web:
                config = _documents_config(store, config, args)
            if not queued:  # a worker checks its own keys and providers
                check_configuration(config, credentials)
            if config.engine == "pipeline" and not args.quiet:  # a hosted engine: no estimate
                guess = estimate(config, prices)
                say(estimate_line(guess, account_pace(guess, config, credentials, store)))
            run_id = session.run_id = create_run(store, args.question, config, parent_run_id=parent,
                                                 person=owner)
            say(f"Run id: {run_id}")
            run = go(run_id)
        while run is not None and run.status == "waiting":
            if not answer_waiting(store, run_id, args):
                return _fail(waiting_message(store, run_id), secrets, EXIT_WAITING)
            run = go(run_id)
    except ResearchError as exc:
        return _fail(str(exc), secrets, EXIT_USAGE)
    if run is None:  # --detach
        say(f"Run {run_id} is queued for a worker. Wait for it and write its report with: "
            f"python -m research --wait {run_id}")
        print(run_id)
        return EXIT_OK
    if run.status == "cancelled":  # in the words of every surface (research/voice.py)
        return _fail(f"{voice.status_line(run)} (run {run_id})", secrets, EXIT_CANCELLED)
    if run.error == DISK_FULL_MESSAGE:
        return _fail(session.disk_full_message(), secrets, EXIT_FAILED)
    if run.status != "completed":
        return _fail(f"{voice.status_line(run)} Continue it with: python -m research --resume "
                     f"{run_id}", secrets, EXIT_FAILED)
    stored = store.get_report(run_id)
    out = args.out or Path(f"{file_stem(run.question, stored.created_at if stored else '')}"
                           f".{args.format}")
    session.writing = out
    try:
        write_atomically(out, export_run(store, run_id, args.format))
    except (ResearchError, OSError) as exc:
        reason = "the disk is full" if is_disk_full(exc) else str(exc)
        return _fail(f"The research finished but the report could not be saved to {out} "
                     f"({reason}); nothing was left there. Write it again with "
                     f"python -m research --resume {run_id} --out PATH", secrets, EXIT_FAILED)
    session.writing = None
    # Still a completed run (exit 0) with warnings, but never shown as a plain success.
    say(f"{voice.run_label(run)}. Report written to {out} ({run.totals.sources or 0} "
        f"sources, cost {voice.money(run.totals.cost_usd or 0.0)}).")
    for warning in run.warnings:
        say(f"  Warning: {redact(voice.plain_error(warning), secrets)}")
    print(run_id)
    return EXIT_OK


def run_config(env: dict[str, str], *, preset: str | None = None, subtopics: int | None = None,
               sources: int | None = None, reviews: int | None = None,
               breadth: int | None = None, depth: int | None = None,
               schedule: str | None = None, clarify: bool = False,
               language: str | None = None, max_cost: float | None = None,
               review_plan: bool = False, engine: str | None = None,
               section: str | None = None, done_when: str = "", want: str = "",
               steer: bool = False) -> ResearchConfig:
    """A new run's configuration from the CLI's options (by their flag names): the one
    mapping from options to `build_config`, which the HTTP API uses too (research.api), so
    both refuse the same values with the same words. Raises ConfigError."""
    return build_config(
        env=env, preset=preset, SUBTOPIC_COUNT=subtopics, SOURCES_PER_SUBTOPIC=sources,
        REVIEW_CYCLES=reviews, BREADTH=breadth, DEPTH=depth,
        schedule=schedule.replace("-", "_") if schedule else None,
        REQUIRE_CLARIFICATION=True if clarify else None, report_language=language,
        max_cost_usd=max_cost, review_plan=True if review_plan else None, engine=engine,
        dig_deeper_section=section, done_when=done_when.strip(), want=want.strip(),
        steer=True if steer else None,
    )


def _queued(args: argparse.Namespace, env: dict[str, str], db_path: Path | str) -> Runs | None:
    """The door to the job queue when workers execute this call's run (--detach, --wait, or
    external workers), joined only to enqueue and watch; None when it executes here. The
    job engine (slow to import) is loaded only then."""
    settings = WorkerSettings.from_env(env)
    if not (args.detach or args.wait or settings.mode == "external"):
        return None
    from research.runs import Runs

    return Runs(db_path, workers=settings, watch_only=True, env=lambda: env)


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path` and move it into place only when complete, so
    a full disk or Ctrl-C never leaves a half-written report at `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _documents_config(store: Store, config: ResearchConfig,
                      args: argparse.Namespace) -> ResearchConfig:
    """Ingest --docs (each bad file named, the rest kept) and read the chosen documents."""
    added: list[str] = []
    for result in ingest_paths(store, args.docs or [], collection=args.collection):
        say(f"{'Added' if result.ok else 'Skipped'} {result.filename}: {result.message}")
        if result.ok and result.document_id:
            added.append(result.document_id)
    if args.docs and not added:
        raise ResearchError("None of the files given with --docs could be used (see above).")
    config = with_sources(config, "documents" if args.no_web else "both",
                          collection=args.collection or "",
                          document_ids=[] if args.collection else added)
    check_scope(store, config)
    return config


def follow_up_question(store: Store, parent: str, section: str, owner: str | None) -> str:
    """The question of a \"dig deeper\" run into `section` of `parent`'s report (also the
    HTTP API's); ResearchError naming the sections when there is no such section."""
    run = store.get_run(parent, person=owner)
    report = store.get_report(parent)
    if run is None or report is None:
        raise ResearchError(f"Run {parent} has no finished report to dig deeper into.")
    sections = report_sections(report.markdown)
    if section not in sections:
        raise ResearchError(f"The report has no section {section!r}; its sections are: "
                            + ", ".join(sections) + ".")
    return dig_deeper_question(run.question, section)


def _fail(message: str, secrets: list[str], code: int) -> int:
    say(f"error: {redact(message, secrets)}")
    return code
