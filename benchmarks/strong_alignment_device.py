"""CUDA against CPU for :func:`numerics.strong_alignment_mc`: the same draws, the same numbers, and the speed-up.

    python -m benchmarks.strong_alignment_device [--ps 128 2048] [--trials 2]

Per size, one call on each device with the same seed: the largest absolute difference over every output (the draws
are made on the CPU; the kernel, the feature product and the eigendecompositions run on the device) and the wall
times, CPU first, with their ratio.  Prints one line per size; asserts nothing (a benchmark reports).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def compare(p: int, trials: int, device: str) -> dict:
    from numerics import MonteCarloSettings, strong_alignment_mc
    from theory import label_coordinate_bins

    kw = dict(snr=1.0, bins=label_coordinate_bins(1.0, 6))
    out, times = {}, {}
    for dev in ("cpu", device):
        t0 = time.perf_counter()
        settings = MonteCarloSettings(trials, 11, device=dev, labels="iid")
        out[dev] = strong_alignment_mc("erf", 0.5, 1.0, p, [0.0, 1e-3], settings, **kw)
        if dev != "cpu":
            torch.cuda.synchronize()
        times[dev] = time.perf_counter() - t0
    diff = max(float(np.nanmax(np.abs(out["cpu"][k] - out[device][k]))) for k in out["cpu"])
    return dict(p=p, trials=trials, max_abs_diff=diff, cpu_s=times["cpu"], device_s=times[device],
                ratio=times["cpu"] / times[device])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ps", nargs="+", type=int, default=[128, 2048])
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    print(f"torch {torch.__version__}, CPU threads {torch.get_num_threads()}, device "
          f"{torch.cuda.get_device_name() if args.device.startswith('cuda') else args.device}")
    for p in args.ps:
        r = compare(p, args.trials, args.device)
        print(f"p={r['p']} trials={r['trials']}: max |cpu - {args.device}| = {r['max_abs_diff']:.2e}; "
              f"cpu {r['cpu_s']:.2f} s, {args.device} {r['device_s']:.2f} s, ratio {r['ratio']:.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
