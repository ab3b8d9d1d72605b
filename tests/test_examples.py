"""The example scripts run end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_derive_ridge_error_example(tmp_path):
    out = tmp_path / "ridge.png"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "derive_ridge_error.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "identical to the first reconstruction: True" in proc.stdout
    assert "(1 - c)/(snr + 1)" in proc.stdout or "3/(4*(snr + 1))" in proc.stdout
    assert out.exists() and out.stat().st_size > 1000


def test_toy_claim_example():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "toy_claim.py")], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "T1 at seed 0: PASS" in proc.stdout
    assert "20 seeds:" in proc.stdout and "flags: none" in proc.stdout
    assert "under the truth: 0 FAIL" in proc.stdout or "under the truth: 1 FAIL" in proc.stdout
