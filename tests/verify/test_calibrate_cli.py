"""``python -m verify calibrate`` checks its options before the first check runs and keeps finished seeds on
SIGINT / SIGTERM (the preflight and the interrupt handling of ``python -m verify``, :mod:`verify._preflight`)."""

from __future__ import annotations

import json
import os
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
    if ctx.seed == 0:
        raise KeyboardInterrupt
    return _ok(ctx)


def _terminated(ctx) -> Outcome:
    if ctx.seed == 0:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in this thread at the next bytecode
        time.sleep(5)
        raise AssertionError("SIGTERM did not stop the check")
    return _ok(ctx)


@pytest.fixture(autouse=True)
def _checks_imported():
    all_claims()  # register the real checks first, so that a replaced registry stays as set


@pytest.fixture
def recording(monkeypatch) -> list:
    """A1 and A2 replaced by checks that record each (id, seed) they run."""
    ran: list = []

    def make(cid):
        def run(ctx):
            ran.append((cid, ctx.seed))
            return _ok(ctx)
        return run

    fake_claims(monkeypatch, {"A1": make("A1"), "A2": make("A2")})
    return ran


def _calibrate(tmp_path: Path, *extra: str) -> list[str]:
    return ["calibrate", "--profile", "smoke", "--only", "A1", "A2", "--seeds", "2", "--out", str(tmp_path / "out"),
            "--cache-dir", "none", *extra]


@pytest.mark.parametrize("extra, match", [
    (("--jobs", "0"), "--jobs must be an integer >= 1"),
    (("--seeds", "1"), "--seeds must be >= 2"),
    (("--first-seed", "-1"), "--first-seed must be >= 0"),
    (("--device", "bogus"), "--device: device must be 'cpu', 'cuda' or 'cuda:<k>'"),
    (("--scheduler", "tcp://127.0.0.1:1"), "--scheduler needs --executor dask"),
    (("--out", "{file}"), "--out {file}: not a writable directory"),
    (("--cache-dir", "{file}"), "--cache-dir {file}: not a writable directory"),
    (("--markdown", "{dir}"), "--markdown {dir}: is a directory"),
])
def test_bad_options_are_one_error_before_any_check(recording, tmp_path, extra, match):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    fill = {"file": str(a_file), "dir": str(tmp_path)}
    extra = tuple(x.format(**fill) for x in extra)
    with pytest.raises(SystemExit) as info:
        main(_calibrate(tmp_path) + list(extra))
    assert str(info.value).startswith("error: ") and match.format(**fill) in str(info.value), info.value
    assert recording == []


def test_cuda_without_cuda_is_refused(recording, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(SystemExit, match="--device: device is .cuda. but CUDA is not available"):
        main(_calibrate(tmp_path, "--device", "cuda"))
    assert recording == []


@pytest.mark.parametrize("stop, sig", [(_interrupted, "SIGINT"), (_terminated, "SIGTERM")])
def test_signal_keeps_finished_seeds_and_exits_130(monkeypatch, tmp_path, capsys, stop, sig):
    fake_claims(monkeypatch, {"A1": _ok, "A2": stop})
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert main(_calibrate(tmp_path)) == EXIT_INTERRUPTED
    records = tmp_path / "out" / "records"
    assert sorted(p.name for p in records.iterdir()) == ["A1_seed0.json"]  # A2 seed 0 was stopped, seed 1 never ran
    assert not (tmp_path / "out" / "calibration.json").exists()
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "to resume" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"interrupted by {sig} during A2 seed 0: 1 of 4 (check, seed) runs finished")
    assert "run the same command again" in lines[0]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # handlers restored


def test_the_resumed_run_reuses_the_finished_seeds(recording, tmp_path):
    """Interrupted after A1 seed 0; the same command then runs the three others only and writes the summary."""
    rec_dir = tmp_path / "out" / "records"
    rec_dir.mkdir(parents=True)
    kept = {"id": "A1", "seed": 0, "verdict": "PASS", "runtime_s": 1.0, "error": None, "profile": "smoke",
            "comparisons": [_ok(None).comparisons[0].to_json()]}
    (rec_dir / "A1_seed0.json").write_text(json.dumps(kept))
    assert main(_calibrate(tmp_path)) == 0
    assert sorted(recording) == [("A1", 1), ("A2", 0), ("A2", 1)]
    doc = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert [(c["id"], c["n"]) for c in doc["checks"]] == [("A1", 2), ("A2", 2)]


def test_sigint_during_a_real_smoke_calibration(tmp_path):
    """The real command in a subprocess: SIGINT once the first record is stored; exit 130, one resume line, the
    finished records kept (as many as the line says), no traceback."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "verify", "calibrate", "--profile", "smoke", "--only", "A5", "B6", "--seeds", "4",
           "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((out / "records").glob("*.json")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr + stdout, stderr
    lines = [line for line in stderr.splitlines() if "to resume, run the same command again" in line]
    assert len(lines) == 1, stderr
    n_done = int(lines[0].split(": ")[1].split(" of ")[0])
    kept = sorted(p.name for p in (out / "records").glob("*.json"))
    assert 1 <= n_done == len(kept) < 8 and not (out / "calibration.json").exists()


def test_first_seed_runs_a_further_set_of_seeds(recording, tmp_path):
    """``--first-seed K``: base seeds K..K+N-1, named so in the markdown."""
    md = tmp_path / "cal.md"
    assert main(_calibrate(tmp_path, "--first-seed", "30", "--markdown", str(md))) == 0
    assert sorted(recording) == [("A1", 30), ("A1", 31), ("A2", 30), ("A2", 31)]
    assert "base seeds 30..31" in md.read_text()
