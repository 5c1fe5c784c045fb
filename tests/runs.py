"""One way to start a research run in a test (the `runs` and `http_runs` fixtures, conftest.py).

`runs` drives the engine through the in-process fakes (tests/fakes.py): the stand-in's own
answers, no sockets, for phase and pipeline-logic tests. `http_runs` goes over real HTTP
through the real SDKs to the stand-in, for the end-to-end tests. Both keep one store per
test and build the config the same way, so a test can switch by changing its fixture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research import Credentials, build_config, resume, run_research
from research.core.config import ResearchConfig
from research.core.records import Run
from research.llm.base import LLM
from storage import Store
from tests.fakes import Fakes, take_misuses
from tests.standin import StandinServer

QUESTION = "How is heat pump adoption changing in Europe?"


class Runner:
    """Calling it runs research to its end and returns (store, run_id)."""

    def __init__(self, standin: StandinServer, env: dict[str, str], db: Path, *, fakes: bool) -> None:
        self.standin = standin
        self.env = env
        self.db = db
        self.fakes = fakes
        self.credentials = Credentials.from_env(env)
        self._store: Store | None = None
        self._closers: list[Any] = []

    @property
    def store(self) -> Store:
        """The test's store (created on first use; keys handed to it for redaction)."""
        if self._store is None:
            self._store = Store(self.db, secrets=self.credentials.secrets())
        return self._store

    def use_store(self, store: Store) -> Runner:
        """Run into this store instead (e.g. the dashboard's, from `dash_env`)."""
        self._store = store
        return self

    def with_env(self, **values: str) -> Runner:
        """Later runs (and resumes) see these environment variables too."""
        self.env = {**self.env, **values}
        return self

    def config(self, env: dict[str, str] | None = None, **overrides: Any) -> ResearchConfig:
        """The run's config from the stand-in's env; pages time out after 5 s unless told (room for a
        loaded machine; the hostile slow page needs minutes)."""
        return build_config(env=env or self.env, **{"fetch_timeout_s": 5, **overrides})

    def deps(self, config: ResearchConfig) -> dict[str, Any]:
        """`execute()`'s seams: the fakes, or nothing (the real SDKs over HTTP)."""
        if not self.fakes:
            return {}
        deps = Fakes(self.standin).deps(config)
        self._closers.append(deps["fetcher"])
        return deps

    def __call__(self, question: str = QUESTION, *, env: dict[str, str] | None = None,
                 model: LLM | None = None, **overrides: Any) -> tuple[Store, str]:
        """Run to the end; `model` answers every role instead of the stand-in's brain."""
        env = env or self.env
        return self.with_config(self.config(env, **overrides), question, env=env, model=model)

    def with_config(self, config: ResearchConfig, question: str = QUESTION, *,
                    env: dict[str, str] | None = None, model: LLM | None = None) -> tuple[Store, str]:
        """Run a config built by the test (e.g. through `with_sources`) to the end."""
        deps = self.deps(config)
        if model is not None:
            deps["llm_factory"] = lambda *_: model
        run_id = run_research(question, store=self.store, config=config,
                              credentials=Credentials.from_env(env or self.env), **deps)
        return self.store, run_id

    def completed(self, question: str = QUESTION, **overrides: Any) -> tuple[Store, str, Run]:
        """A run that must complete: (store, run_id, run row); fails with the run's error."""
        store, run_id = self(question, **overrides)
        run = store.get_run(run_id)
        assert run is not None and run.status == "completed", run and run.error
        return store, run_id, run

    def resume(self, run_id: str, *, env: dict[str, str] | None = None) -> Run:
        """Continue a stored run (same seams as it started with) and return it as it ended."""
        env = env or self.env
        run = self.store.get_run(run_id)
        assert run is not None
        config = ResearchConfig(**run.config)
        return resume(run_id, store=self.store, credentials=Credentials.from_env(env),
                      **self.deps(config))

    def close(self) -> None:
        """Close the fake fetchers; fail if a fault was given to fakes that cannot act it out."""
        for closer in self._closers:
            closer.close()
        misused = take_misuses()
        assert not misused, misused
