#!/bin/bash
# The crossover study of docs/strong_alignment.md ("The crossover at fixed strength"), seed 0, from the repository
# root: bash studies/crossover/run.sh. About 15 minutes on one core (each python call < 3.5 min); arrays in .cache/crossover.
set -euo pipefail
export OMP_NUM_THREADS=1
python studies/crossover/check.py
for c in 0.5 0.3333333333; do
  python studies/crossover/sim.py --c $c --p 128 --trials 256 --seed 0
  python studies/crossover/sim.py --c $c --p 256 --trials 128 --seed 0
  python studies/crossover/sim.py --c $c --p 512 --trials 64 --seed 0
  python studies/crossover/sim2.py --c $c --p 128 --trials 128 --seed 0
  python studies/crossover/sim2.py --c $c --p 256 --trials 48 --seed 0
  python studies/crossover/sim2.py --c $c --p 512 --trials 16 --seed 0
done
python studies/crossover/table.py > .cache/crossover/table_step1.md
python studies/crossover/table.py --parts > .cache/crossover/table_step1_parts.md
python studies/crossover/table2.py > .cache/crossover/table_sim2.md
python studies/crossover/finite_rank.py
python studies/crossover/compare.py > .cache/crossover/table_step2.md
python studies/crossover/t2_conventions.py > .cache/crossover/table_t2.md
