"""Interrupts keep results: SIGINT or SIGTERM during ``python -m verify`` writes the finished checks to
``--json`` / ``--report-dir`` (the interrupted one as ERROR with a note), prints one line saying how to resume,
and exits 130 without a traceback; the resumed run (same command, same cache) reports the numbers of an
uninterrupted one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import fake_claims
from verify.claim import all_claims, claim_of
from verify.cli import EXIT_INTERRUPTED, main
from verify.results import Comparison, Outcome


def _ok(ctx) -> Outcome:
    return Outcome([Comparison("x", 1.0, 1.0, 0.1, "exact", True)], notes="fine")


def _interrupted(ctx) -> Outcome:
    ctx.seed_for("started")
    raise KeyboardInterrupt


def _terminated(ctx) -> Outcome:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in this thread at the next bytecode
    time.sleep(5)
    raise AssertionError("SIGTERM did not stop the check")


@pytest.fixture(autouse=True)
def _checks_imported():
    all_claims()  # register the real checks first, so that a replaced registry stays as set


@pytest.mark.parametrize("stop, sig", [(_interrupted, "SIGINT"), (_terminated, "SIGTERM")])
def test_signal_writes_the_finished_checks_and_exits_130(monkeypatch, tmp_path, capsys, stop, sig):
    fake_claims(monkeypatch, {"A1": _ok, "A2": stop, "A3": _ok})
    path, rep = tmp_path / "out.json", tmp_path / "rep"
    argv = ["--only", "A1", "A2", "A3", "--json", str(path), "--report-dir", str(rep), "--cache-dir", "none"]
    # the handlers in force before the run (SIG_IGN for SIGINT under nohup or a background job, else Python's own)
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert main(argv) == EXIT_INTERRUPTED
    doc = json.loads(path.read_text())
    assert [r["id"] for r in doc["results"]] == ["A1", "A2"]  # A3 never ran
    assert doc["results"][0]["verdict"] == "PASS"
    a2 = doc["results"][1]
    assert a2["verdict"] == "ERROR" and a2["notes"].startswith(f"INTERRUPTED by {sig}")
    assert doc["exit_code"] == EXIT_INTERRUPTED
    assert doc["interrupted"]["signal"] == sig and doc["interrupted"]["check"] == "A2"
    assert doc["interrupted"]["not_run"] == ["A3"]
    assert json.loads((rep / "report.json").read_text())["results"][1]["verdict"] == "ERROR"
    assert "**interrupted**" in (rep / "report.md").read_text()
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "to resume" in line]
    assert len(lines) == 1 and "run the same command again" in lines[0] and "Traceback" not in err
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # handlers restored


def test_uninterrupted_run_has_no_interrupted_entry(monkeypatch, tmp_path):
    fake_claims(monkeypatch, {"A1": _ok})
    path = tmp_path / "out.json"
    assert main(["--only", "A1", "--json", str(path), "--cache-dir", "none"]) == 0
    assert "interrupted" not in json.loads(path.read_text())


# ----------------------------------------------------------------------------------------- a real run, SIGINT
IDS = ["A1", "A4", "B6"]  # two lanes: A4 (the longest) is interrupted inside its sweep; A1, then B6, in the other
_VOLATILE = {"runtime_s", "fit_time", "sweep", "started_utc", "argv", "figures", "wall_s", "elapsed_s", "cache"}
_VOLATILE_TEXT = (r"\d+ computed, \d+ from the cache", r"[Rr]untime [\d.]+ ?s", r"[\d.]+ ?s (wall|CPU)",
                  r"in [\d.]+ ?s")


def _numbers(doc: dict) -> list:
    """The results without wall-clock fields and cache counts, in fields and in notes (what differs between a
    cold and a resumed run)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in _VOLATILE and "time" not in k}
        if isinstance(v, list):
            return [strip(x) for x in v]
        if isinstance(v, str):
            for pattern in _VOLATILE_TEXT:
                v = re.sub(pattern, "<volatile>", v)
            return v
        return v

    return strip(doc["results"])


def _verify(out: Path, cache: Path | str) -> list[str]:
    return [sys.executable, "-m", "verify", "--profile", "smoke", "--only", *IDS, "--json", str(out),
            "--cache-dir", str(cache), "--jobs", "2"]


def test_sigint_keeps_finished_checks_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path):
    out, cache = tmp_path / "out.json", tmp_path / "cache"
    cmd = _verify(out, cache)
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not list((cache / "paper_a_rates").rglob("*.json")):  # A4 has finished its first cell
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr
    assert len([line for line in stderr.splitlines() if "to resume, run the same command again" in line]) == 1, stderr
    doc = json.loads(out.read_text())
    results = {r["id"]: r for r in doc["results"]}
    assert [i for i in IDS if i in results or i in doc["interrupted"]["not_run"]] == IDS, stdout
    assert results["A4"]["verdict"] == "ERROR" and "INTERRUPTED by SIGINT" in results["A4"]["notes"]
    assert all("INTERRUPTED by SIGINT" in r["notes"] for r in results.values() if r["verdict"] == "ERROR")
    assert results[doc["interrupted"]["check"]]["verdict"] == "ERROR"

    resumed = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert resumed.returncode in (0, 1), resumed.stderr
    doc = json.loads(out.read_text())
    sweeps = doc["results"][1]["data"]["sweep"]  # predictions, then trials: the finished cells were reused
    assert sum(v["n_cached"] for v in sweeps.values()) >= 1
    fresh_out = tmp_path / "fresh.json"
    fresh = subprocess.run(_verify(fresh_out, "none"), cwd=tmp_path, capture_output=True, text=True,
                           timeout=240)
    assert fresh.returncode == resumed.returncode, fresh.stderr
    got, want = _numbers(doc), _numbers(json.loads(fresh_out.read_text()))
    assert got == want, [(a["id"], a == b) for a, b in zip(got, want)]
