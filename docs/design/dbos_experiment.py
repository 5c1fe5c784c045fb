"""The experiment behind docs/design/jobs.md, for dbos==3.4.0 in a scratch virtualenv.

    python3 -m venv /tmp/dbosvenv && /tmp/dbosvenv/bin/pip install dbos==3.4.0
    cd "$(mktemp -d)" && cp .../dbos_experiment.py exp.py
    /tmp/dbosvenv/bin/python exp.py start & sleep 9; kill -9 $!   # killed mid-workflow
    /tmp/dbosvenv/bin/python exp.py restart                         # recovery at launch
    /tmp/dbosvenv/bin/python exp.py cancel                          # cancel, resume, fork
    cat steps.log

Not part of the app or the tests: it needs its own virtualenv and writes beside itself.
"""

import os
import sys
import time

from dbos import DBOS, DBOSConfig, SetEnqueueOptions, SetWorkflowID

HERE = os.path.dirname(os.path.abspath(__file__))
LOG = os.path.join(HERE, "steps.log")


def log(msg: str) -> None:
    with open(LOG, "a") as f:
        f.write(f"{time.time():.2f} pid={os.getpid()} {msg}\n")


config: DBOSConfig = {
    "name": "exp",
    "system_database_url": f"sqlite:///{HERE}/sys.sqlite",
    "application_version": "exp-1",  # fixed, so a code edit does not strand pending work
    "executor_id": "local",
}
DBOS(config=config)


@DBOS.step()
def do_step(run_id: str, i: int) -> int:
    log(f"{run_id} step {i} start")
    time.sleep(1.0)
    log(f"{run_id} step {i} end")
    return i


@DBOS.workflow()
def research(run_id: str, n: int) -> str:
    for i in range(n):
        do_step(run_id, i)
    log(f"{run_id} done")
    return run_id


def enqueue(run_id: str, person: str, n: int):  # type: ignore[no-untyped-def]
    runs = DBOS.retrieve_queue("runs")
    with SetWorkflowID(run_id), SetEnqueueOptions(queue_partition_key=person):
        return runs.enqueue(research, run_id, n)


def cancel_resume_fork() -> None:
    enqueue("carol-1", "carol", 6)
    time.sleep(2.5)
    DBOS.cancel_workflow("carol-1")
    log("carol-1 cancel requested")
    time.sleep(3)
    print("after cancel:", DBOS.get_workflow_status("carol-1").status)
    log("carol-1 resume requested")
    handle = DBOS.resume_workflow("carol-1")
    print("resumed:", handle.get_result(), DBOS.get_workflow_status("carol-1").status)
    print("steps:", [(s["function_id"], s["function_name"]) for s in DBOS.list_workflow_steps("carol-1")])
    fork = DBOS.fork_workflow("carol-1", 5)
    print("fork from step 5:", fork.get_workflow_id(), fork.get_result())


if __name__ == "__main__":
    DBOS.launch()
    # 3.x: queues live in the system database and are registered after launch.
    DBOS.register_queue("runs", worker_concurrency=2, partition_concurrency=1, polling_interval_sec=0.2)
    if sys.argv[1] == "start":
        for run_id, person in (("alice-1", "alice"), ("alice-2", "alice"), ("bob-1", "bob")):
            enqueue(run_id, person, 6)
        time.sleep(1000)  # killed from outside
    elif sys.argv[1] == "restart":  # enqueues nothing: launch recovers the PENDING workflows
        for wid in ("alice-1", "alice-2", "bob-1"):
            print(wid, DBOS.retrieve_workflow(wid).get_result())
    elif sys.argv[1] == "cancel":
        cancel_resume_fork()
    DBOS.destroy()
