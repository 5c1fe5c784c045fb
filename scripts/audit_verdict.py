"""Read one pip-audit run (its JSON report and its stderr) and say what it means.

Exit status: 0 every package was checked and none has a known vulnerability; 1 at least one
has (listed with its advisory ids and the versions that fix it); 2 the advisory data could not
be reached, so nothing (or too little) was checked: the reason is printed and the caller may
try another advisory source. pip-audit alone cannot tell the last case apart: when an index
answers "not found" for every package it prints "No known vulnerabilities found" and exits 0.

Usage: audit_verdict.py SERVICE REPORT.json STDERR.txt   (standard library only)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

CLEAN, VULNERABLE, UNREACHABLE = 0, 1, 2
_NETWORK = re.compile(
    r"(NameResolutionError|Failed to resolve '[^']+'|Max retries exceeded[^\n]*|"
    r"Could not connect[^\n]*|Connection refused|ConnectTimeout|ReadTimeout|ServiceError[^\n]*|"
    r"\b[45]\d\d (?:Client|Server) Error[^\n]*)"
)


def verdict(service: str, report: dict[str, Any] | None, stderr: str) -> tuple[int, list[str]]:
    """(exit status, lines to print) for one pip-audit run against `service`."""
    if not report or not isinstance(report.get("dependencies"), list):
        return UNREACHABLE, [f"{service}: no report ({_network_reason(stderr)})"]
    deps = report["dependencies"]
    vulnerable = [d for d in deps if d.get("vulns")]
    skipped = [d for d in deps if d.get("skip_reason")]
    checked = len(deps) - len(skipped)
    if vulnerable:
        lines = [f"{service}: known vulnerabilities in {len(vulnerable)} pinned package(s):"]
        for dep in vulnerable:
            for vuln in dep["vulns"]:
                fixes = ", ".join(vuln.get("fix_versions") or []) or "no fixed version yet"
                ids = ", ".join([vuln.get("id", "?"), *vuln.get("aliases", [])])
                lines.append(f"  {dep['name']} {dep.get('version', '')}: {ids} (fixed in: {fixes})")
        return VULNERABLE, lines
    if checked == 0:
        return UNREACHABLE, [
            f"{service}: none of the {len(deps)} pinned packages could be checked "
            f"({_skip_reason(skipped)})"
        ]
    lines = [f"{service}: {checked} pinned packages checked, no known vulnerability."]
    if skipped:
        lines.append(f"  {len(skipped)} could not be checked: "
                     + ", ".join(d["name"] for d in skipped[:20]))
    return CLEAN, lines


def _skip_reason(skipped: list[dict[str, Any]]) -> str:
    first = str(skipped[0].get("skip_reason", "")) if skipped else ""
    if "not found on PyPI" in first:
        return ("the package index answers 'not found' for every release's advisory data, "
                f"e.g. {first.split(': ', 1)[-1]}")
    return first[:200] or "no reason given"


def _network_reason(stderr: str) -> str:
    found = _NETWORK.findall(stderr)
    if found:
        return " ".join(found[-1].split())[:240]
    tail = [line for line in stderr.strip().splitlines() if line.strip()]
    return tail[-1][:240] if tail else "pip-audit wrote nothing"


def main(argv: list[str]) -> int:
    service, report_path, stderr_path = argv
    try:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report = None
    stderr = Path(stderr_path).read_text(encoding="utf-8", errors="replace") \
        if Path(stderr_path).exists() else ""
    status, lines = verdict(service, report, stderr)
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
