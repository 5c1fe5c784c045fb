"""The run's threads: one executor per run, sized from its configuration, shared by the phases.

Phases used to start their own pools (workers x 40 I/O threads, verify, section and fetch
pools, and a new thread for every model call's time limit). Now the run owns one
`RunExecutor` with three bounded layers, one per kind of waiting:

- `units`: work that waits on other work for a long time: a research worker (one subtopic,
  MAX_PARALLEL_WORKERS at once) and a hosted engine running beside the pipeline.
- `tasks`: one piece of I/O work: a search with its retries, a page fetch, a scoring,
  verify or critic batch, a report section, a pre-flight ping. A task may wait only on
  `calls`.
- `calls`: one raw blocking request under a wall-clock limit (`run_with_deadline`): the SDK
  request of a model call or a search. A call waits on nothing in the executor.

Why layers and not one pool: a task that waits on another task of the same bounded pool
deadlocks once every thread holds such a waiter (the queued task it waits for never gets a
thread). Here waiting goes one way only, units -> tasks -> calls (and the run's own thread
may wait on any), so a full layer only delays work; it can never wait on itself. A nested
`run_with_deadline` inside a call (a provider bounding its own request) runs inline rather
than taking a second thread (see research.llm.deadline).

Beside the layers, `model_slots` bounds the run's model requests in flight, whatever their
role (16 per MAX_PARALLEL_WORKERS): the pressure a run puts on a provider, as opposed to the
threads that wait on it. What the provider's account allows (requests and tokens a minute)
is the account's pacer's business, in front of these slots and shared by every run of the
process (research.llm.pacing); a model server of one's own (Ollama, llama.cpp, vLLM) has its
own gate for the whole process too (research/llm/local_server.py): as many requests in flight
as it generates answers at once, whichever run they come from. A request waits there before
it takes a slot, and its time limit starts only once it is sent.

Threads are started only as work needs them and reused, so the sizes are upper bounds, not
costs. A pool keeps its threads once started, though, and each keeps the stack it touched: so
between phases the run's own thread calls `trim()`, and the next phase starts afresh with the
threads it needs (research needs many more than writing or verifying). They are not daemon
threads: a call abandoned at its time limit ends when its socket read times out, and
interpreter exit waits for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, TypeVar

from research.core.config import ResearchConfig
from research.core.errors import RunCancelled, StepTimeLimit

if TYPE_CHECKING:
    from research.llm.local_server import LocalServer

T = TypeVar("T")

HOSTED_BESIDE = 2  # hosted engines that may run beside the pipeline (engine "all")
MIN_TASKS = 32  # the verify step's batches of both passes at once (its own pool had 32 threads)
MAX_TASKS_PER_WORKER = 64
# A worker's relevance-scoring batches (2 x SOURCES_PER_SUBTOPIC / SCORE_BATCH, 10 at the
# default) go out at the same time, and so do the verify step's two passes over a report
# (about 60 batches at the default length): at 8 per worker the default run (4 workers, 32)
# held half of verify's batches back for a whole call, and some scoring batches too.
MODEL_REQUESTS_PER_WORKER = 16
SLOT_POLL_S = 0.25  # how often a request waiting its turn looks at cancellation and the deadline


def task_threads(config: ResearchConfig) -> int:
    """Tasks in flight at once: each parallel worker can fetch every candidate page of its
    subtopic (2 x SOURCES_PER_SUBTOPIC, 16 to 64) at the same time; never fewer than the
    verify step's batches."""
    per_worker = max(16, min(MAX_TASKS_PER_WORKER, 2 * config.sources_per_subtopic))
    return max(MIN_TASKS, config.max_parallel_workers * per_worker)


def model_requests(config: ResearchConfig) -> int:
    """Model requests of one run in flight at once, whatever their role: MAX_PARALLEL_WORKERS
    sets the pressure on the provider as well as the subtopics at once. A request waiting its
    turn waits here, where its own time limit has not started, not in a provider's queue (a
    local model server with a few slots would time the rest out)."""
    return MODEL_REQUESTS_PER_WORKER * config.max_parallel_workers


class RequestSlots:
    """The run's model requests in flight (`model_requests`): the one limiter every role's
    calls share."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._free = threading.BoundedSemaphore(self.size)

    @contextmanager
    def hold(self, what: str, *, cancel: threading.Event | None = None,
             deadline: float | None = None, server: LocalServer | None = None,
             model: str = "", holding: Callable[[], AbstractContextManager[None]] | None = None,
             ) -> Iterator[float]:
        """One request's turn; a cancelled run or a step out of time stops the wait. A request
        to a model server of one's own first waits for the server's turn (its gate is shared by
        every run of the process), holding none of the run's slots meanwhile, inside `holding`
        (the run's held time, which steps get back); yields how long it waited there."""
        if server is None:
            with self._slot(what, cancel, deadline):
                yield 0.0
            return
        with server.turn(model, cancel=cancel, holding=holding) as waited, \
                self._slot(what, cancel, None if deadline is None else deadline + waited):
            yield waited

    @contextmanager
    def _slot(self, what: str, cancel: threading.Event | None,
              deadline: float | None) -> Iterator[None]:
        while not self._free.acquire(timeout=SLOT_POLL_S):
            if cancel is not None and cancel.is_set():
                raise RunCancelled("The run was cancelled.")
            if deadline is not None and time.monotonic() >= deadline:
                raise StepTimeLimit(f"{what} could not be asked: the step's time limit "
                                    "(STEP_TIMEOUT_MS) ran out while it waited its turn.")
        try:
            yield
        finally:
            self._free.release()


class RunExecutor:
    """The three layers of one run's threads (see the module docstring); close it when the
    run ends."""

    def __init__(self, config: ResearchConfig, *, name: str = "run") -> None:
        self.name = name
        self.unit_threads = config.max_parallel_workers + HOSTED_BESIDE
        self.task_threads = task_threads(config)
        # Every waiter (a unit, a task or the run's own thread) has at most one call in flight;
        # the margin covers calls abandoned at their time limit and still reading.
        self.call_threads = self.unit_threads + self.task_threads + 8
        self.model_slots = RequestSlots(model_requests(config))
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def units(self) -> ThreadPoolExecutor:
        return self._layer("unit", self.unit_threads)

    @property
    def tasks(self) -> ThreadPoolExecutor:
        return self._layer("task", self.task_threads)

    @property
    def calls(self) -> ThreadPoolExecutor:
        return self._layer("call", self.call_threads)

    def _layer(self, layer: str, size: int) -> ThreadPoolExecutor:
        with self._lock:
            pool = self._pools.get(layer)
            if pool is None:
                if self._closed:
                    raise RuntimeError("the run's executor is closed")
                pool = self._pools[layer] = ThreadPoolExecutor(
                    size, thread_name_prefix=f"{self.name}-{layer}")
            return pool

    def trim(self) -> None:
        """Let the idle threads go: between phases, from the run's own thread, when nothing
        of the finished phase still submits work. Work still running (a call abandoned at
        its time limit) ends on its thread; the next phase gets fresh pools."""
        with self._lock:
            pools, self._pools = self._pools, {}
        for pool in pools.values():
            pool.shutdown(wait=False)

    def close(self) -> None:
        """Stop taking work; drop what has not started; do not wait for calls still reading
        (their own socket timeouts end them)."""
        with self._lock:
            pools, self._pools, self._closed = self._pools, {}, True
        for pool in pools.values():
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> RunExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def submit_limited(pool: ThreadPoolExecutor, jobs: Iterable[Callable[[], T]],
                   limit: int) -> list[Future[T]]:
    """Submit `jobs` so that at most `limit` of them run at once: a layer shared with other
    work (the hosted engines share `units` with the research workers) still keeps a phase's
    own bound, such as MAX_PARALLEL_WORKERS. Blocks the caller while `limit` are running; the
    caller is never one of the pool's own threads waiting on its own layer."""
    slots = threading.BoundedSemaphore(max(1, limit))
    futures: list[Future[T]] = []
    for job in jobs:
        slots.acquire()
        future = pool.submit(job)
        future.add_done_callback(lambda _: slots.release())
        futures.append(future)
    return futures
