"""`python -m research db ...`: bring a database's schema up to date, or copy every run to
another database (a team's PostgreSQL server). Both say in plain words what they did; a
URL is never printed with its password.

    python -m research db upgrade [--db PATH_OR_URL]
    python -m research db copy --to postgresql://user:password@host:5432/db [--from PATH] [--append]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sqlalchemy.exc import OperationalError

from research.core.settings import effective_env
from storage import DatabaseUnavailableError, DatabaseValueError, Store, default_db, resolve_db
from storage.base import open_database
from storage.copy import CopyRefused, CopyReport, copy_store
from storage.db_value import redact_url
from storage.migrate import upgrade

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_DEFAULT = Path("data/research.db")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m research db",
                                description="Manage the research database.")
    sub = p.add_subparsers(dest="action", required=True)
    up = sub.add_parser("upgrade", help="apply the pending schema migrations")
    up.add_argument("--db", help="file path or postgresql:// URL "
                                 "(default: DEEP_RESEARCH_DB or data/research.db)")
    cp = sub.add_parser("copy", help="copy every run and document to another database")
    cp.add_argument("--to", required=True, help="the target, e.g. postgresql://user:pw@host/db")
    cp.add_argument("--from", dest="source",
                    help="the database to copy from (default: DEEP_RESEARCH_DB or data/research.db)")
    cp.add_argument("--append", action="store_true",
                    help="add to a target that already holds runs (runs it has are skipped)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        if args.action == "upgrade":
            return _upgrade(args)
        return _copy(args)
    except DatabaseValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except (DatabaseUnavailableError, CopyRefused) as exc:
        return _fail(str(exc), EXIT_FAILED)
    except OperationalError as exc:
        return _fail(f"The database refused the work: {redact_url(str(exc.orig or exc))}",
                     EXIT_FAILED)


def _configured(value: str | None) -> Path | str:
    return resolve_db(value, _DEFAULT) if value else default_db(effective_env())


def _upgrade(args: argparse.Namespace) -> int:
    database, _, location = open_database(_target_text(_configured(args.db)))
    try:
        before, after = upgrade(database)
    except OperationalError as exc:
        raise DatabaseUnavailableError(
            f"Could not reach the database at {location} ({_reason(exc)}).") from None
    finally:
        database.dispose()
    if before == after:
        _say(f"The database at {location} is already up to date (schema revision {after}).")
    else:
        was = f"schema revision {before}" if before else "the schema made before migrations"
        _say(f"Upgraded the database at {location} from {was} to schema revision {after}; "
             "every row is kept.")
    return EXIT_OK


def _copy(args: argparse.Namespace) -> int:
    source_value = _configured(args.source)
    target_value = resolve_db(args.to, _DEFAULT)
    if isinstance(source_value, Path) and not source_value.is_file():
        return _fail(f"There is no database file at {source_value} to copy from; name it with "
                     "--from PATH.", EXIT_USAGE)
    if _target_text(source_value) == _target_text(target_value):
        return _fail("The source and the target are the same database; nothing was copied.",
                     EXIT_USAGE)
    source, target = Store(_target_text(source_value)), Store(_target_text(target_value))
    try:
        report = copy_store(source, target, append=args.append)
    finally:
        source.close()
        target.close()
    _say(_summary(report, source.location, target.location))
    return EXIT_OK


def _summary(report: CopyReport, source: str, target: str) -> str:
    rows = report.rows
    what = (f"Copied {report.runs} runs ({rows.get('sources', 0)} sources, "
            f"{rows.get('drafts', 0)} drafts, {rows.get('verifications', 0)} verdicts, "
            f"{rows.get('events', 0)} events) and {report.documents} documents "
            f"({rows.get('passages', 0)} passages) from {source} to {target}; every table's "
            "row count matches the source.")
    if report.skipped_runs:
        what += f" {report.skipped_runs} runs the target already had were left as they were."
    return what


def _target_text(value: Path | str) -> str:
    return str(value)


def _reason(exc: OperationalError) -> str:
    text = str(exc.orig or exc).strip()
    return redact_url(text.splitlines()[0] if text else "no answer")


def _fail(message: str, code: int) -> int:
    _say(f"error: {message}")
    return code


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
