"""Start an update of a finished report: "Update with what's new".

The update is a run of its own, started through the one door to runs (`Runs.start`), with
the earlier version's question and settings plus the day that version was finished
(`update_since`). It builds on that version (`parent_run_id`): its sources and findings are
inherited, its plan is reused, searches ask only for what is newer, pages already read are
not read again (research/living/revise.py). The dashboard's button, `python -m research
update RUN_ID` and a watch's schedule all start updates here.
"""

from __future__ import annotations

from research.core.config import Credentials
from research.core.errors import ConfigError
from research.core.settings import effective_env, prices_path
from research.living.settings import update_request
from research.llm.pricing import PriceTable
from research.phases.start.preflight import check_configuration
from research.runs.jobs import Runs


def start_update(runs: Runs, run_id: str, *, person: str | None = None,
                 cost_cap: float | None = None, credentials: Credentials | None = None,
                 prices: PriceTable | None = None) -> str:
    """Queue an update of the finished run `run_id` (of `person`; None: anyone's) and return
    the new run's id at once.

    `cost_cap` (US dollars; None: the earlier version's cap) bounds the update. Keys and
    prices default to this process's own settings (secrets file, then environment), as for
    a run recovered after a restart. Raises ConfigError, in plain words, for an unknown or
    unfinished run or one whose settings cannot be reused.
    """
    earlier, config = update_request(runs.store, run_id, person=person, cost_cap=cost_cap)
    env = effective_env()
    credentials = credentials or Credentials.from_env(env)
    if not runs.external:  # this process executes it: its keys must do (workers check theirs)
        check_configuration(config, credentials)
    return runs.start(earlier.question, config, credentials,
                      prices=prices if prices is not None else _prices(env),
                      parent_run_id=earlier.id, person=person if person is not None
                      else earlier.person)


def _prices(env: dict[str, str]) -> PriceTable | None:
    try:
        return PriceTable.load(prices_path(env))
    except ConfigError:  # a broken prices file: the update uses the built-in prices
        return None
