"""One I/O executor per run: sized from the configuration, layered so it cannot deadlock, and
the only source of a run's worker threads (no thread per model call)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from research import Credentials, build_config, run_research
from research.core.errors import ProviderTimeout
from research.core.executor import HOSTED_BESIDE, RunExecutor, submit_limited, task_threads
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.deadline import run_with_deadline
from research.llm.messages import Completion, Message, Usage
from storage import Store
from tests.standin import StandinServer


@pytest.fixture
def executor() -> Iterator[RunExecutor]:
    ex = RunExecutor(build_config(env={}, MAX_PARALLEL_WORKERS=1, SOURCES_PER_SUBTOPIC=5),
                     name="t")
    yield ex
    ex.close()


def test_sizes_come_from_the_configuration() -> None:
    small = build_config(env={}, MAX_PARALLEL_WORKERS=1, SOURCES_PER_SUBTOPIC=5)
    wide = build_config(env={}, MAX_PARALLEL_WORKERS=8, SOURCES_PER_SUBTOPIC=20)
    assert task_threads(small) == 32  # never below what the verify step sends at once
    assert task_threads(wide) == 8 * 40  # every candidate page (2 x sources) of each worker
    ex = RunExecutor(wide)
    try:
        assert ex.unit_threads == 8 + HOSTED_BESIDE
        assert ex.task_threads == 320 and ex.call_threads >= ex.unit_threads + ex.task_threads
    finally:
        ex.close()


def test_a_full_task_layer_waiting_on_calls_does_not_deadlock(executor: RunExecutor) -> None:
    """Three times more tasks than task threads, each waiting on a call: waiting goes one way
    (tasks -> calls), so they all finish."""
    def task(n: int) -> int:
        return run_with_deadline(lambda: time.sleep(0.01) or n, 5.0, "call", executor.calls)

    futures = [executor.tasks.submit(task, n) for n in range(executor.task_threads * 3)]
    assert [f.result(timeout=30) for f in futures] == list(range(executor.task_threads * 3))


def test_a_bounded_call_inside_a_call_runs_inline(executor: RunExecutor) -> None:
    """A provider bounding its own request inside the run's bounded call takes no second
    thread (that would be a call waiting on a call)."""
    outer: list[threading.Thread] = []

    def inner() -> threading.Thread:
        return threading.current_thread()

    def call() -> threading.Thread:
        outer.append(threading.current_thread())
        return run_with_deadline(inner, 5.0, "inner", executor.calls)

    assert run_with_deadline(call, 5.0, "outer", executor.calls) is outer[0]
    assert outer[0].name.startswith("t-call")


def test_a_call_over_its_limit_times_out_and_a_queued_one_never_starts() -> None:
    ex = RunExecutor(build_config(env={}, MAX_PARALLEL_WORKERS=1, SOURCES_PER_SUBTOPIC=5))
    release = threading.Event()
    started: list[int] = []
    try:
        hung = [ex.calls.submit(release.wait) for _ in range(ex.call_threads)]  # layer full
        begun = time.monotonic()
        with pytest.raises(ProviderTimeout, match="did not answer within 0.2 s"):
            run_with_deadline(lambda: started.append(1), 0.2, "The model", ex.calls)
        assert time.monotonic() - begun < 2.0
        release.set()
        for f in hung:
            f.result(timeout=5)
        time.sleep(0.1)
        assert started == []  # cancelled while queued: it did not run late
    finally:
        release.set()
        ex.close()


def test_submit_limited_keeps_its_own_bound_in_a_wider_layer(executor: RunExecutor) -> None:
    running, peak, lock = [0], [0], threading.Lock()

    def job() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    futures = submit_limited(executor.tasks, [job] * 12, 2)
    for f in futures:
        f.result(timeout=10)
    assert peak[0] == 2


def test_a_run_starts_its_threads_only_from_its_executor(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No thread per model call or search, no pool per worker: every thread the engine starts
    during a run is one of the run's executor (or its heartbeat), so their number is bounded
    by the executor's sizes however many calls the run makes."""
    names: list[str] = []
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        names.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    credentials = Credentials.from_env(standin_env)
    store = Store(tmp_path / "r.db", secrets=credentials.secrets())
    config = build_config(env=standin_env, preset="quick", fetch_timeout_s=3)
    run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                          config=config, credentials=credentials)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    ours = [n for n in names if "process_request" not in n]  # the stand-in serves requests
    assert ours and all(n.startswith(("run-", "heartbeat:")) for n in ours), sorted(set(ours))
    sizes = RunExecutor(config)
    sizes.close()
    assert len(ours) <= 1 + sizes.unit_threads + sizes.task_threads + sizes.call_threads


def test_trim_lets_idle_threads_go_and_the_next_phase_gets_fresh_ones(
    executor: RunExecutor,
) -> None:
    first = executor.tasks.submit(threading.current_thread).result(timeout=5)
    executor.trim()
    first.join(timeout=5)
    assert not first.is_alive()  # research's threads do not stay for writing and verifying
    second = executor.tasks.submit(threading.current_thread).result(timeout=5)
    assert second is not first and second.is_alive()
    executor.close()
    with pytest.raises(RuntimeError, match="closed"):
        executor.tasks.submit(time.sleep, 0)


class _EchoModel:
    """A model that answers at once, and says which thread asked it."""
    provider, model = "fake", "echo"

    def complete(self, messages: Sequence[Message], **_: object) -> Completion:
        return Completion(threading.current_thread().name, Usage(1, 1), self.provider, self.model)


def test_a_model_bound_before_a_trim_still_calls_through_the_run_executor(
    executor: RunExecutor,
) -> None:
    """Roles are bound once (the lead at the start) and called in later phases: each call
    looks the layer up again, so a trim between phases cannot leave a role on a closed pool."""
    lead = RoleLLM(_EchoModel(), "lead", UsageMeter(), calls=lambda: executor.calls)
    assert lead.text([Message("user", "hi")]).startswith("t-call")
    executor.trim()
    assert lead.text([Message("user", "hi")]).startswith("t-call")


def test_model_requests_in_flight_are_bounded_per_run_and_the_wait_obeys_stops() -> None:
    from research.core.errors import RunCancelled, StepTimeLimit
    from research.core.executor import MODEL_REQUESTS_PER_WORKER, RequestSlots, model_requests

    one = build_config(env={}, MAX_PARALLEL_WORKERS=1)
    assert model_requests(one) == MODEL_REQUESTS_PER_WORKER
    assert model_requests(build_config(env={})) == 4 * MODEL_REQUESTS_PER_WORKER
    slots = RequestSlots(2)
    inside, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def request() -> None:
        with slots.hold("model"):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            release.wait(10)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=request) for _ in range(5)]
    for t in threads:
        t.start()
    while inside[0] < 2:
        time.sleep(0.01)
    # Every slot is taken: a cancelled run and a step out of time stop the wait at once.
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(RunCancelled):
        with slots.hold("model", cancel=cancelled):
            pass
    with pytest.raises(StepTimeLimit, match="waited its turn"):
        with slots.hold("model", deadline=time.monotonic()):
            pass
    release.set()
    for t in threads:
        t.join(10)
    assert peak[0] == 2 and inside[0] == 0


def test_the_default_request_limit_holds_back_no_batch_a_default_run_sends_at_once() -> None:
    """At 8 per worker (32 at the default) a default run held half of verify's batches and
    some scoring batches back for a whole model call each: the limit is for pressure on the
    provider, not a schedule the run has to wait on at its own defaults."""
    import math

    from research.core.executor import model_requests
    from research.phases.gather.findings import FINDINGS_GROUP
    from research.phases.gather.scoring import SCORE_BATCH
    from research.phases.verify.judge import BATCH_CLAIMS

    config = build_config(env={})
    # Every research worker: all its scoring batches at once, beside its query call; then
    # all its findings groups and the gaps call at once.
    scoring = math.ceil(2 * config.sources_per_subtopic / SCORE_BATCH) + 1
    findings = math.ceil(config.sources_per_subtopic / FINDINGS_GROUP) + 1
    per_worker = max(scoring, findings)
    assert model_requests(config) >= config.max_parallel_workers * per_worker
    # The verify step: both passes over the claims of a 1,500-word report (about 100 claims).
    assert model_requests(config) >= 2 * math.ceil(100 / BATCH_CLAIMS)
