#!/bin/bash
# The diagnosis of docs/paper_a_finite_m.md ("Why A3 sat above its model"), from the repository root:
# bash studies/paper_a_diagnosis/run.sh. About 15 minutes on one core; records in .cache/a3diag/.
set -euo pipefail
export OMP_NUM_THREADS=1 PYTHONPATH=.
mkdir -p .cache/a3diag && rm -f .cache/a3diag/*.jsonl
python studies/paper_a_diagnosis/diag.py --levels 0 1 2 3 4 5 6 --designs 4 --noise 0 --out .cache/a3diag/nf_d30_low.jsonl
python studies/paper_a_diagnosis/diag.py --levels 0 --designs 4 --noise 40 --out .cache/a3diag/noise_d30_low_L0.jsonl
python studies/paper_a_diagnosis/diag.py --levels 6 --designs 4 --noise 8 --out .cache/a3diag/noise_d30_low_L6.jsonl
python studies/paper_a_diagnosis/table.py
python studies/paper_a_diagnosis/design_mc.py --levels 0 1 2 3 --total 400 200 100 60 --out .cache/a3diag/design_mc_a.jsonl
python studies/paper_a_diagnosis/design_mc.py --levels 6 5 4 --total 40 40 40 --out .cache/a3diag/design_mc_b.jsonl
