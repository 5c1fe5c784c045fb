"""The HTTP API (`python -m research serve`) as a real server on 127.0.0.1, over real HTTP with
httpx, against a temporary SQLite store and the stand-in: complete runs started, followed and
downloaded over the API, the event stream resumed from Last-Event-ID, one person's token
against another's run, bad input, the token command, and signed callbacks to a local
receiver. The rate limit and the listening rule are in test_api_limits.py; fuzzing the
OpenAPI document in test_api_fuzz.py."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import sqlite3
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from research.llm.pacing import forget_pacers
from tests.api_server import ApiServer, Token, research
from tests.standin import StandinServer

QUESTION = "How do heat pumps perform in cold climates?"
RUN_WITHIN_S = 240.0  # a guard against a hang, not a timing assertion


class Receiver:
    """A local callback receiver: records every POST; answers 503 to the first `fail_first`."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.accepted: list[bytes] = []
        self.fail_first = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.posts.append(({k.lower(): v for k, v in self.headers.items()}, body))
                failing = len(receiver.posts) <= receiver.fail_first
                if not failing:
                    receiver.accepted.append(body)
                self.send_response(503 if failing else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def bodies_for(self, path: str) -> list[tuple[dict[str, str], bytes]]:
        return [(h, b) for h, b in self.posts if json.loads(b)["run"]["id"] in path]


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.httpd.shutdown()


def clean_standin(standin: StandinServer) -> None:
    """The stand-in as `standin_env` leaves it (an earlier test in this process may have left
    faults, limits or a local-server mode behind)."""
    standin.reset()
    forget_pacers()


@pytest.fixture(autouse=True)
def _clean(standin: StandinServer) -> None:
    clean_standin(standin)


@pytest.fixture(scope="module")
def api(standin: StandinServer, receiver: Receiver,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    folder = tmp_path_factory.mktemp("api")
    clean_standin(standin)  # module-scoped: set up before any test's own clean stand-in
    env = {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0",
           "DEEP_RESEARCH_DB": str(folder / "research.db"),
           "DEEP_RESEARCH_CALLBACK_ALLOW_PRIVATE": "1",
           "DEEP_RESEARCH_CALLBACK_ALLOWED_PORTS": str(receiver.port),
           "DEEP_RESEARCH_CALLBACK_FIRST_WAIT_MS": "100"}
    server = ApiServer.start(env, folder)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def alice(api: ApiServer) -> Token:
    return api.token("alice@example.com", "tests")


@pytest.fixture(scope="module")
def bob(api: ApiServer) -> Token:
    return api.token("bob@example.com")


def events_of(client: httpx.Client, run_id: str, **headers: str) -> list[dict[str, Any]]:
    """Every SSE event of the run's stream until it ends, as {id, event, data}."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers,
                       timeout=RUN_WITHIN_S) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            if not line:
                if "event" in current or "data" in current:
                    found.append(current)
                current = {}
                continue
            name, _, value = line.partition(":")
            if name in ("id", "event", "data"):
                current[name] = value.removeprefix(" ")
    if current:
        found.append(current)
    return found


def start(client: httpx.Client, **options: Any) -> str:
    answer = client.post("/v1/runs", json={"question": QUESTION, "preset": "quick", **options})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["run_id"])


def wait_for_status(client: httpx.Client, run_id: str, wanted: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_WITHIN_S
    while time.monotonic() < deadline:
        status = client.get(f"/v1/runs/{run_id}").json()
        if status["status"] in wanted:
            return dict(status)
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} never reached {wanted}: {status}")


def wait_for_post(receiver: Receiver, run_id: str, event: str) -> None:
    """Until the receiver has accepted a POST of `event` for the run."""
    deadline = time.monotonic() + RUN_WITHIN_S
    while time.monotonic() < deadline:
        if any(json.loads(body)["event"] == event and json.loads(body)["run"]["id"] == run_id
               for body in receiver.accepted):
            return
        time.sleep(0.2)
    raise AssertionError(f"no {event} POST accepted for run {run_id}: {receiver.posts}")


@pytest.fixture(scope="module")
def finished(api: ApiServer, alice: Token) -> str:
    """One complete run of alice's, started and followed over the API."""
    with api.client(alice) as client:
        run_id = start(client, subtopics=3, sources=5)
        events = events_of(client, run_id)
    assert events[-1]["event"] == "end"
    ended = json.loads(events[-1]["data"])
    assert ended["status"] == "completed", (ended, events[-6:])
    return run_id


def test_a_run_started_over_the_api_completes_and_every_export_downloads(
        api: ApiServer, alice: Token, finished: str) -> None:
    with api.client(alice) as client:
        status = client.get(f"/v1/runs/{finished}").json()
        assert status["status"] == "completed" and status["progress"] == 100
        assert status["settings"]["subtopic_count"] == 3 and status["totals"]["sources"] > 0
        report = client.get(f"/v1/runs/{finished}/report", params={"format": "md"})
        assert report.status_code == 200 and report.headers["content-type"].startswith(
            "text/markdown")
        assert "[1]" in report.text and "Sources" in report.text
        pdf = client.get(f"/v1/runs/{finished}/report", params={"format": "pdf"})
        assert pdf.content.startswith(b"%PDF")
        for fmt in ("docx", "xlsx"):
            file = client.get(f"/v1/runs/{finished}/report", params={"format": fmt})
            assert zipfile.is_zipfile(io.BytesIO(file.content)), fmt
        bib = client.get(f"/v1/runs/{finished}/report", params={"format": "bib"}).text
        assert "@" in bib and "url" in bib.lower()
        csv = client.get(f"/v1/runs/{finished}/report", params={"format": "csv"}).text
        assert csv.splitlines()[0].lstrip("\ufeff").startswith("Claim,Verdict")
        sources = client.get(f"/v1/runs/{finished}/sources").json()["sources"]
        cited = sorted(s["number"] for s in sources if s["number"] is not None)
        assert cited and cited == list(range(1, len(cited) + 1))
        assert all(s["url"] for s in sources)
        rows = client.get(f"/v1/runs/{finished}/evidence").json()["rows"]
        assert rows and all(r["claim"] and r["verdict"] for r in rows)
        document = client.get("/openapi.json").json()
        assert {"/v1/runs", "/v1/runs/{run_id}/events", "/v1/documents"} <= set(document["paths"])
        assert "HTTPBearer" in document["components"]["securitySchemes"]
        assert "swagger" in client.get("/docs").text.lower()
        listed = client.get("/v1/runs", params={"search": "heat pumps"}).json()
        assert finished in [r["id"] for r in listed["runs"]] and listed["total"] >= 1


def test_the_event_stream_resumes_after_last_event_id_without_repeats(
        api: ApiServer, alice: Token, finished: str) -> None:
    with api.client(alice) as client:
        whole = [e for e in events_of(client, finished) if "id" in e]
        ids = [int(e["id"]) for e in whole]
        assert len(ids) > 10 and ids == sorted(set(ids))
        assert {"initiated", "step_started", "completed"} <= {e["event"] for e in whole}
        assert all(json.loads(e["data"])["type"] == e["event"] for e in whole)
        middle = ids[len(ids) // 2]
        resumed = events_of(client, finished, **{"Last-Event-ID": str(middle)})
        assert [int(e["id"]) for e in resumed if "id" in e] == [i for i in ids if i > middle]
        assert resumed[-1]["event"] == "end"
        by_query = client.get(f"/v1/runs/{finished}/events", params={"after": ids[-2]})
        assert f"id: {ids[-1]}" in by_query.text and f"id: {ids[-2]}\n" not in by_query.text
        bad = client.get(f"/v1/runs/{finished}/events", headers={"Last-Event-ID": "abc"})
        assert bad.status_code == 422 and "Last-Event-ID" in bad.json()["error"]["message"]


def test_another_persons_token_finds_no_run_of_the_first(
        api: ApiServer, alice: Token, bob: Token, finished: str) -> None:
    with api.client(bob) as client:
        assert client.get("/v1/me").json()["person"] == "bob@example.com"
        for method, path in (("GET", ""), ("GET", "/events"), ("GET", "/report"),
                             ("GET", "/sources"), ("GET", "/evidence"), ("POST", "/cancel"),
                             ("POST", "/pause"), ("POST", "/resume"), ("POST", "/write-up")):
            answer = client.request(method, f"/v1/runs/{finished}{path}")
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "not_found"
        assert finished not in [r["id"] for r in client.get("/v1/runs").json()["runs"]]
        built = client.post("/v1/runs", json={"question": QUESTION, "build_on": finished})
        assert built.status_code == 404
    with api.client(alice) as client:  # untouched: still alice's, still completed
        assert client.get(f"/v1/runs/{finished}").json()["status"] == "completed"


def test_bad_input_is_refused_with_the_bound_it_broke_and_nothing_is_stored(
        api: ApiServer, alice: Token) -> None:
    with api.client(alice) as client:
        before = client.get("/v1/runs").json()["total"]
        cases = [
            ({"question": QUESTION, "subtopics": 12}, "SUBTOPIC_COUNT must be between 3 and 10"),
            ({"question": QUESTION, "schedule": "breadth-depth", "depth": 9},
             "DEPTH must be between 1 and 5"),
            ({"question": "x" * 2001}, "the limit is 2000"),
            ({"question": "   "}, "Please type a research question"),
            ({"question": "a\x07b"}, "U+0007"),
            ({"question": QUESTION, "max_cost": 20000}, "between 0 and 10000"),
            ({"question": QUESTION, "subtopics": "many"}, "subtopics"),
            ({"question": QUESTION, "colour": "red"}, "colour"),
            ({"question": QUESTION, "preset": "huge"}, "preset"),
            ({"question": QUESTION, "callback_url": "http://127.0.0.1:22/"}, "port 22"),
            ({"question": QUESTION, "callback_url": "http://169.254.169.254/"}, "metadata"),
        ]
        for body, words in cases:
            answer = client.post("/v1/runs", json=body)
            assert 400 <= answer.status_code < 500, (body, answer.text)
            error = answer.json()["error"]
            assert words in error["message"] and error["code"], (body, error)
        assert client.get("/v1/runs").json()["total"] == before
        broken = client.post("/v1/runs", content=b"{not json",
                             headers={"Content-Type": "application/json"})
        assert broken.status_code == 422 and broken.json()["error"]["code"] == "invalid_request"
        huge = client.post("/v1/runs", content=b"{" + b" " * (300 * 1024) + b"}",
                           headers={"Content-Type": "application/json"})
        assert huge.status_code == 413 and "bytes" in huge.json()["error"]["message"]
        streamed = client.post("/v1/runs", content=iter([b"{", b" " * (300 * 1024), b"}"]),
                               headers={"Content-Type": "application/json"})  # no length given
        assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "too_large"
        page = client.get("/v1/runs", params={"limit": 101})
        assert page.status_code == 422 and "100" in page.json()["error"]["message"]
        missing = client.get("/v1/runs/nosuchrun/report")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    with api.client() as anonymous:
        answer = anonymous.get("/v1/runs")
        assert answer.status_code == 401 and "Bearer" in answer.json()["error"]["message"]
        wrong = anonymous.get("/v1/runs", headers={"Authorization": "Bearer drs_madeup"})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"


def test_tokens_are_made_listed_and_revoked_with_the_command_and_only_hashes_are_stored(
        api: ApiServer) -> None:
    made = api.token("carol@example.com", "laptop")
    with api.client(made) as client:
        assert client.get("/v1/me").json() == {"token_id": made.id, "person": "carol@example.com"}
    listed = research(["token", "list", "--owner", "carol@example.com"], api.env, api.folder)
    assert made.id in listed.stdout and "laptop" in listed.stdout
    assert made.text not in listed.stdout + listed.stderr
    with closing(sqlite3.connect(api.folder / "research.db")) as db:
        stored = "\n".join(db.iterdump())
    assert made.text not in stored and made.secret not in stored
    assert hashlib.sha256(made.text.encode()).hexdigest() in stored
    other = research(["token", "revoke", made.id, "--owner", "dave@example.com"], api.env,
                     api.folder)
    assert other.returncode == 1  # not dave's to revoke
    revoked = research(["token", "revoke", made.id, "--owner", "carol@example.com"], api.env,
                       api.folder)
    assert revoked.returncode == 0, revoked.stderr
    with api.client(made) as client:
        assert client.get("/v1/me").status_code == 401


def test_a_waiting_run_is_answered_over_the_api_and_its_callbacks_are_signed(
        api: ApiServer, alice: Token, receiver: Receiver) -> None:
    receiver.fail_first = 1  # the first POST fails: it is tried again
    with api.client(alice) as client:
        run_id = start(client, review_plan=True, callback_url=receiver.url("/hook/plan"))
        waiting = wait_for_status(client, run_id, {"waiting", "failed", "completed"})
        assert waiting["status"] == "waiting", waiting
        assert waiting["waiting_for"]["kind"] == "plan" and waiting["waiting_for"]["plan"]
        wrong = client.post(f"/v1/runs/{run_id}/clarification", json={"answers": ["x"]})
        assert wrong.status_code == 409 and wrong.json()["error"]["code"] == "not_waiting"
        wait_for_post(receiver, run_id, "run.waiting")  # told before it is answered
        plan = waiting["waiting_for"]["plan"]
        edited = [{"id": s["id"], "title": s["title"], "questions": s["questions"]}
                  for s in plan[:2]]
        carried = client.post(f"/v1/runs/{run_id}/plan", json={"subtopics": edited})
        assert carried.status_code == 200, carried.text
        done = wait_for_status(client, run_id, {"completed", "failed"})
        assert done["status"] == "completed"
        assert done["settings"]["review_plan"] is True
    wait_for_post(receiver, run_id, "run.completed")
    posts = receiver.bodies_for(run_id)
    events = [json.loads(body)["event"] for _, body in posts]
    assert events[0] == events[1] == "run.waiting"  # the refused first try, then again
    assert events[-1] == "run.completed" and events.count("run.completed") == 1
    for headers, body in posts:
        expected = "sha256=" + hmac.new(alice.secret.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-signature"], expected)
        assert headers["content-type"] == "application/json"
    final = json.loads(posts[-1][1])["run"]
    assert final["id"] == run_id and final["status"] == "completed"
    forged = "sha256=" + hmac.new(b"another secret", posts[-1][1], hashlib.sha256).hexdigest()
    assert forged != posts[-1][0]["x-signature"]


def test_a_run_is_cancelled_over_the_api_and_refused_controls_say_why(
        api: ApiServer, alice: Token, finished: str) -> None:
    with api.client(alice) as client:
        run_id = start(client, clarify=True)
        waiting = wait_for_status(client, run_id, {"waiting", "failed", "completed"})
        assert waiting["waiting_for"]["kind"] == "clarification"
        assert waiting["waiting_for"]["questions"]
        paused = client.post(f"/v1/runs/{run_id}/pause")  # it waits: nothing to pause
        assert paused.status_code == 409 and "running" in paused.json()["error"]["message"]
        early = client.post(f"/v1/runs/{run_id}/write-up")  # nothing researches: nothing to stop
        assert early.status_code == 409 and "written up early" in early.json()["error"]["message"]
        cancelled = client.post(f"/v1/runs/{run_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        again = client.post(f"/v1/runs/{run_id}/cancel")
        assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
        assert client.get(f"/v1/runs/{run_id}/report").json()["error"]["code"] == "no_report"
        resumed = client.post(f"/v1/runs/{finished}/resume")  # completed: nothing to resume
        assert resumed.status_code == 409 and "completed" in resumed.json()["error"]["message"]


def test_clarifying_questions_are_answered_over_the_api_and_the_stream_says_it_waits(
        api: ApiServer, alice: Token) -> None:
    with api.client(alice) as client:
        run_id = start(client, clarify=True)
        events = events_of(client, run_id)  # ends by itself: the run waits for alice
        end = json.loads(events[-1]["data"])
        assert events[-1]["event"] == "end" and end["status"] == "waiting"
        questions = end["waiting_for"]["questions"]
        assert questions and end["waiting_for"]["answer_at"].endswith("/clarification")
        seen = max(int(e["id"]) for e in events if "id" in e)
        answered = client.post(f"/v1/runs/{run_id}/clarification",
                               json={"answers": ["Homes in Scandinavia"] * len(questions)})
        assert answered.status_code == 200, answered.text
        rest = events_of(client, run_id, **{"Last-Event-ID": str(seen)})
        assert all(int(e["id"]) > seen for e in rest if "id" in e)
        assert json.loads(rest[-1]["data"])["status"] == "completed"
        steps = client.get(f"/v1/runs/{run_id}").json()
        assert steps["status"] == "completed" and steps["waiting_for"] is None


def test_the_next_round_is_chosen_over_the_api(api: ApiServer, alice: Token) -> None:
    with api.client(alice) as client:
        run_id = start(client, steer=True, schedule="breadth-depth", breadth=2, depth=2)
        waiting = wait_for_status(client, run_id, {"waiting", "failed", "completed"})
        assert waiting["status"] == "waiting", waiting
        asked = waiting["waiting_for"]
        assert asked["kind"] == "steering" and asked["round"] == 1
        numbers = [p["n"] for p in asked["proposals"]]
        wrong = client.post(f"/v1/runs/{run_id}/steering", json={"follow": [99]})
        assert wrong.status_code == 409 and "no proposal 99" in wrong.json()["error"]["message"]
        chosen = client.post(f"/v1/runs/{run_id}/steering",
                             json={"follow": numbers[:1], "add": ["Air-to-water units"]})
        assert chosen.status_code == 200, chosen.text
        done = wait_for_status(client, run_id, {"completed", "failed", "waiting"})
        assert done["status"] == "completed", done  # depth 2: no choice after the last level
        assert done["totals"]["rounds"] == 2
        sources = client.get(f"/v1/runs/{run_id}/sources").json()["sources"]
        assert any(s["subtopic_id"] == "r2u1" for s in sources)  # the branch alice added


def test_the_documents_library_over_the_api(api: ApiServer, alice: Token,
                                            tmp_path: Path) -> None:
    text = ("# Ground-source heat pumps\n\nBorehole heat pumps in Finland kept a seasonal "
            "performance factor of 3.1 through winters at minus twenty degrees.\n")
    with api.client(alice) as client:
        added = client.post("/v1/documents", files={"file": ("finland.md", text.encode())},
                            data={"collection": "Nordic studies"})
        assert added.status_code == 201, added.text
        doc_id = added.json()["document_id"]
        listed = client.get("/v1/documents", params={"collection": "Nordic studies"}).json()
        assert [d["id"] for d in listed["documents"]] == [doc_id]
        assert listed["documents"][0]["collections"] == ["Nordic studies"]
        found = client.get("/v1/documents/search", params={"q": "seasonal performance Finland"})
        assert found.json()["passages"][0]["document_id"] == doc_id
        names = [c["name"] for c in client.get("/v1/collections").json()["collections"]]
        assert "Nordic studies" in names
        refused = client.post("/v1/documents", files={"file": ("tool.exe", b"MZ\x00\x01")})
        assert refused.status_code == 422 and "tool.exe" in refused.json()["error"]["message"]
        made = client.post("/v1/collections", json={"name": "Empty one"})
        assert made.status_code == 201 and made.json()["documents"] == 0
        assert client.delete("/v1/collections/Empty one").status_code == 204
        assert client.delete(f"/v1/documents/{doc_id}").status_code == 204
        assert client.get(f"/v1/documents/{doc_id}").status_code == 404
