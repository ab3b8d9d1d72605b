"""CUDA against CPU for :func:`numerics.strong_alignment_mc` alone: the same draws, the same numbers, and the speed-up.

    python -m benchmarks.strong_alignment_device [--ps 128 2048] [--trials 2]

B9's cell of the device check (:func:`benchmarks.device.mc_cells`; every workload at once: ``python -m benchmarks
--only device``) at larger ``p``: per size, one call on each device with the same seed, the largest absolute
difference over every output (the draws are made on the CPU; the kernel, the feature product and the
eigendecompositions run on the device) and the wall times, CPU first, with their ratio.  Prints one line per size;
asserts nothing (a benchmark reports).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from .device import device_name, mc_cells, timed


def compare(p: int, trials: int, device: str) -> dict:
    cell = mc_cells(2 * p, trials, seed=11)["B9"]  # c = 1/2: n = 2 p tokens
    (cpu, t_cpu), (dev, t_dev) = timed(cell, "cpu"), timed(cell, device)
    diff = max(float(np.nanmax(np.abs(cpu[k] - dev[k]))) for k in cpu)
    return dict(p=p, trials=trials, max_abs_diff=diff, cpu_s=t_cpu, device_s=t_dev, ratio=t_cpu / t_dev)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ps", nargs="+", type=int, default=[128, 2048])
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    print(f"torch {torch.__version__}, CPU threads {torch.get_num_threads()}, device {device_name(args.device)}")
    for p in args.ps:
        r = compare(p, args.trials, args.device)
        print(f"p={r['p']} trials={r['trials']}: max |cpu - {args.device}| = {r['max_abs_diff']:.2e}; "
              f"cpu {r['cpu_s']:.2f} s, {args.device} {r['device_s']:.2f} s, ratio {r['ratio']:.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
