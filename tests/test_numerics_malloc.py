"""``numerics.malloc.keep_freed_memory``: argument checks, and that glibc takes the settings (Linux only)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from numerics.malloc import keep_freed_memory


@pytest.mark.parametrize("bad", [0, -1, 2**31, 1.5, True, "1"])
def test_refuses_thresholds_outside_the_int_range(bad):
    with pytest.raises(ValueError, match="threshold"):
        keep_freed_memory(mmap_threshold=bad)
    with pytest.raises(ValueError, match="threshold"):
        keep_freed_memory(trim_threshold=bad)


def test_glibc_takes_the_settings_and_large_blocks_stop_faulting():
    """In a fresh process: with the settings, reallocating a 64 MB tensor costs far fewer page faults (torch's CPU
    allocator is glibc's malloc; numpy asks for transparent huge pages, which hides the effect)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    code = (
        "import resource, sys, torch\n"
        "from numerics.malloc import keep_freed_memory\n"
        "ok = keep_freed_memory() if sys.argv[1] == 'on' else True\n"
        "a = torch.ones(2**23, dtype=torch.float64); del a\n"
        "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(10):\n"
        "    a = torch.ones(2**23, dtype=torch.float64); del a\n"
        "print(ok, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n"
    )
    out = {}
    for mode in ("off", "on"):
        res = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, check=True)
        ok, faults = res.stdout.split()
        if ok != "True":
            pytest.skip("the C library is not glibc")
        out[mode] = int(faults)
    # default: each 64 MB block is a fresh mmap (16384 pages faulted per allocation); kept: the heap's pages reused
    assert out["off"] > 10 * 16384 * 0.9
    assert out["on"] < out["off"] / 10
