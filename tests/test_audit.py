"""The dependency audit: a known vulnerability fails it, unreachable advisory data skips it.

`scripts/audit_verdict.py` is what turns pip-audit's report into a verdict (pip-audit itself
says "No known vulnerabilities found" when an index answered "not found" for every package);
it is tested on reports shaped like pip-audit's. When `.venv-audit` is installed (CI runs
`scripts/audit.sh` first), the whole script also runs against a local OSV-compatible server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERDICT = ROOT / "scripts" / "audit_verdict.py"
AUDIT = ROOT / "scripts" / "audit.sh"

VULN = {"id": "PYSEC-2099-1", "aliases": ["CVE-2099-0001"], "fix_versions": ["0.28.2"],
        "description": "Header smuggling."}
NOT_FOUND = "Dependency not found on PyPI and could not be audited: {} ({})"


def _verdict(tmp_path: Path, report: dict[str, Any] | None, stderr: str = "") -> tuple[int, str]:
    report_path, err_path = tmp_path / "report.json", tmp_path / "err.txt"
    if report is not None:
        report_path.write_text(json.dumps(report))
    err_path.write_text(stderr)
    done = subprocess.run([sys.executable, str(VERDICT), "pypi", str(report_path), str(err_path)],
                          capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout


def test_a_known_vulnerability_fails_and_is_named(tmp_path: Path) -> None:
    status, out = _verdict(tmp_path, {"dependencies": [
        {"name": "httpx", "version": "0.28.1", "vulns": [VULN]},
        {"name": "pypdf", "version": "7.1.0", "vulns": []},
    ], "fixes": []})
    assert status == 1
    assert "httpx 0.28.1: PYSEC-2099-1, CVE-2099-0001 (fixed in: 0.28.2)" in out


def test_no_known_vulnerability_passes(tmp_path: Path) -> None:
    status, out = _verdict(tmp_path, {"dependencies": [
        {"name": "httpx", "version": "0.28.1", "vulns": []},
        {"name": "pypdf", "version": "7.1.0", "vulns": []},
    ], "fixes": []})
    assert status == 0 and "2 pinned packages checked" in out


def test_an_index_without_advisory_data_is_a_skipped_audit_not_a_clean_one(tmp_path: Path) -> None:
    # What the package index reachable here gives: pip-audit exits 0, nothing was checked.
    status, out = _verdict(tmp_path, {"dependencies": [
        {"name": n, "skip_reason": NOT_FOUND.format(n, v)}
        for n, v in (("httpx", "0.28.1"), ("pypdf", "7.1.0"))
    ], "fixes": []})
    assert status == 2
    assert "none of the 2 pinned packages could be checked" in out


def test_an_unreachable_advisory_service_is_a_skipped_audit_with_its_reason(tmp_path: Path) -> None:
    stderr = ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.osv.dev', "
              "port=443): Max retries exceeded with url: /v1/query (Caused by "
              "NameResolutionError(\"Failed to resolve 'api.osv.dev'\"))\n")
    status, out = _verdict(tmp_path, None, stderr)
    assert status == 2 and "api.osv.dev" in out


# --- the whole script, against a local OSV-compatible server ------------------------------------

class _Osv(BaseHTTPRequestHandler):
    vulnerable: set[str] = set()
    asked: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name = query["package"]["name"]
        type(self).asked.append(name)
        vulns = [{
            "id": "GHSA-test-0001", "aliases": ["CVE-2099-0002"], "summary": "Test advisory",
            "affected": [{"package": {"name": name, "ecosystem": "PyPI"},
                          "ranges": [{"type": "ECOSYSTEM",
                                      "events": [{"introduced": "0"}, {"fixed": "99.0"}]}]}],
        }] if name in type(self).vulnerable else []
        body = json.dumps({"vulns": vulns} if vulns else {}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def osv_url() -> Iterator[str]:
    if not list((ROOT / ".venv-audit").glob(".installed-*")):
        pytest.skip("pip-audit is not installed in .venv-audit (run scripts/audit.sh once)")
    _Osv.vulnerable, _Osv.asked = set(), []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Osv)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    server.shutdown()
    server.server_close()


def _audit(osv_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AUDIT_SERVICES": "osv", "AUDIT_OSV_URL": osv_url}
    return subprocess.run([str(AUDIT)], capture_output=True, text=True, env=env, timeout=300)


def test_the_audit_script_fails_on_a_known_vulnerability(osv_url: str) -> None:
    _Osv.vulnerable = {"httpx"}
    done = _audit(osv_url)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if "httpx 0.28.1:" in x)
    assert "GHSA-test-0001" in line and "CVE-2099-0002" in line and "fixed in: 99.0" in line
    assert "pypdf" in _Osv.asked and "openai" in _Osv.asked  # every pinned package was asked


def test_the_audit_script_passes_when_nothing_is_known(osv_url: str) -> None:
    done = _audit(osv_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no known vulnerability" in done.stdout


def test_the_audit_script_says_it_was_skipped_when_no_source_answers(osv_url: str) -> None:
    done = _audit("http://127.0.0.1:9/v1/query")  # nothing listens on the discard port
    assert done.returncode == 2, done.stdout + done.stderr
    assert "AUDIT SKIPPED" in done.stdout and "osv" in done.stdout
