"""Where living reports meet the job engine (research/runs): what happens after a run ends in
the process that executed it, and at each tick of the watched topics' schedule.

After a run: a watch's update is settled (kept and told, or dropped quietly:
research/living/watches.py); any other run that finished, failed or waits for its person is
told to them (research/living/notify.py). Both read the executing process's own settings,
as keys are: a worker tells with its own secrets file or environment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from research.living import notify, watches
from storage import Store

log = logging.getLogger(__name__)

Env = Callable[[], Mapping[str, str]]


def telling(env: Env) -> Callable[[Store, str], None]:
    """What the job engine calls after it executed a run (`engine.Worker.after_run`)."""

    def tell(store: Store, run_id: str) -> None:
        after_run(store, run_id, env())

    return tell


def after_run(store: Store, run_id: str, env: Mapping[str, str]) -> None:
    """Settle a watch's update, or tell the run's person how it ended. Never raises."""
    try:
        if watches.settle_run(store, run_id, env):
            return
        run = store.get_run(run_id)
        if run is not None:
            notify.tell_run(run, env)
    except Exception:  # noqa: BLE001 - telling must never change how a run ended
        log.exception("could not tell how run %s ended", run_id)


def on_tick(runs: Any, env: Env, clock: Callable[[], datetime] | None = None
            ) -> Callable[[datetime], list[str]]:
    """What the engine's watch tick does in this process: `watches.look` at the tick's
    scheduled time (or at `clock()`: a test's clock)."""

    def tick(at: datetime) -> list[str]:
        return watches.look(runs, clock() if clock is not None else at, env())

    return tick
