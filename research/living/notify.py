"""Telling a person outside the browser: a run finished, failed or waits for them, or a watched
topic changed (issue 36, point 4).

Through Apprise (https://github.com/caronc/apprise/wiki), one library that speaks e-mail
(`mailto://`), Slack, Microsoft Teams, Telegram, ntfy, Discord, Matrix, a plain webhook
(`json://`) and about a hundred more, each configured by one URL, so the studio keeps no
code per service (local-deep-research uses it for the same reason).

Targets are secrets (an Apprise URL holds a token, a password or a private webhook address):
they are kept like keys, in the secrets file or the environment (`DEEP_RESEARCH_NOTIFY`, or
for a signed-in person `target_key(person)`), read where the run executes, and never reach
the database, the logs, events or exports. What is sent says what happened in one line, with a
link to the run (`DEEP_RESEARCH_BASE_URL`, default http://localhost:8501). Sending never
raises: a target that fails is logged in plain words, without its address.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from research import voice
from research.core.records import Run

log = logging.getLogger(__name__)

NOTIFY_KEY = "DEEP_RESEARCH_NOTIFY"
BASE_URL_KEY = "DEEP_RESEARCH_BASE_URL"
DEFAULT_BASE_URL = "http://localhost:8501"
TITLE = "Deep Research Studio"
SEND_TIMEOUT_S = 15
QUESTION_CHARS = 100

TOLD = ("completed", "failed", "waiting")  # the statuses a person is told about


@dataclass(frozen=True)
class Sent:
    """How a sending went: how many targets took it, and in plain words what went wrong."""

    delivered: int
    failed: int
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.delivered > 0 and self.failed == 0


def target_key(person: str | None) -> str:
    """The setting that holds `person`'s targets: `DEEP_RESEARCH_NOTIFY` without sign-in,
    else one per person, named by a hash (a person's e-mail address never names a setting)."""
    if not person:
        return NOTIFY_KEY
    return f"{NOTIFY_KEY}_{hashlib.sha256(person.encode('utf-8')).hexdigest()[:12].upper()}"


def targets(env: Mapping[str, str], person: str | None) -> list[str]:
    """The Apprise URLs `person` gave (one per line, or separated by spaces or commas)."""
    raw = env.get(target_key(person)) or ""
    return [t for t in re.split(r"[\s,]+", raw) if t]


def run_link(env: Mapping[str, str], run_id: str) -> str:
    base = (env.get(BASE_URL_KEY) or DEFAULT_BASE_URL).strip().rstrip("/")
    return f"{base}/run?run={run_id}"


def one_line(text: str, limit: int = QUESTION_CHARS) -> str:
    """`text` on one line, cut at `limit` characters."""
    return voice.one_line(text, limit)


def run_message(run: Run, link: str) -> str | None:
    """The one line for a run that finished, failed or waits, in the words of every other
    surface ('Completed with warnings: “...” link'); None for any other status."""
    if run.status not in TOLD:
        return None
    return f"{voice.headline(run, limit=QUESTION_CHARS)} {link}"


def changed_message(run: Run, since: str, how_many: int, link: str) -> str:
    """The one line for a watched topic whose update found something new."""
    return (f"Your watched topic changed ({how_many} claim{'s' if how_many != 1 else ''} "
            f"since {since[:10]}): “{voice.one_line(run.question, QUESTION_CHARS)}” {link}")


def send(urls: Sequence[str], body: str, *, title: str = TITLE) -> Sent:
    """Send `body` to every target. Never raises; never logs or returns a target's text."""
    if not urls:
        return Sent(0, 0, "No notification target is set.")
    import apprise  # only when something is sent: it loads its services on first use

    # Apprise's debug lines quote a service's request address, which for some services
    # (a Slack or Teams webhook) is the secret itself: its own warnings and errors mask them.
    logging.getLogger("apprise").setLevel(max(logging.WARNING,
                                              logging.getLogger("apprise").level))
    sent, failed, refused = 0, 0, 0
    for url in urls:  # one at a time, so a failure is counted per target
        box = apprise.Apprise()
        if not box.add(url):
            refused += 1
            continue
        try:
            result = box.notify(body=body, title=title, timeout=SEND_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a service's own bug must not break a run's end
            result = None
        if result:
            sent += 1
        else:
            failed += 1
    problem = None
    if refused:
        problem = (f"{refused} notification target(s) are not addresses Apprise understands; "
                   "check them in Settings.")
    elif failed:
        problem = (f"{failed} notification target(s) could not be reached; check the address "
                   "and that the service is up.")
    if problem:
        log.warning("notification: %s", problem)
    return Sent(sent, failed + refused, problem)


def tell_run(run: Run, env: Mapping[str, str]) -> Sent | None:
    """Tell the run's person how it ended (or that it waits), if they set targets; None when
    there is nothing to say or nowhere to say it."""
    body = run_message(run, run_link(env, run.id))
    urls = targets(env, run.person)
    if body is None or not urls:
        return None
    return send(urls, body)


def send_test(env: Mapping[str, str], person: str | None) -> Sent:
    """The Settings page's "Send a test"."""
    link = (env.get(BASE_URL_KEY) or DEFAULT_BASE_URL).strip().rstrip("/")
    return send(targets(env, person),
                f"Test from Deep Research Studio: notifications reach you here. {link}")
