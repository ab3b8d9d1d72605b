"""Issue 49's three measurements, reproduced by a plain numpy simulation independent of ``numerics`` (docs/multi_head.md,
section 7).

Usage (from the repository root)::

    python studies/multi_head_repro.py shared_sum 1024 4             # tanh + gelu summed, c = 1/2
    python studies/multi_head_repro.py random_sum 1024 4             # 4 random erf heads summed, c = 1/2
    python studies/multi_head_repro.py random_concat_budget 1024 32  # 2 random tanh heads, v = 1/2, c = 2

snr 1, gamma = 1e-3, trial t drawn from ``numpy.random.default_rng([123, t])``; one line per trial (attention,
ridge, their difference), then the means and standard errors.  The ridge probe is solved directly
(``w = (Phi Phi^T + n gamma I)^-1 Phi y``), the activations are the registry's centred ones.
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import theory  # noqa: E402

def centred(name):
    f = theory.numpy_activation(name, centered=True); return f
def err(Phi, y, g):
    p, n = Phi.shape
    w = np.linalg.solve(Phi @ Phi.T + n * g * np.eye(p), Phi @ y)
    r = y - Phi.T @ w
    return r @ r / n
def draw(rng, p, n, snr):
    y = np.ones(n); y[n//2:] = -1; y = rng.permutation(y)
    X = rng.standard_normal((p, n)); X[0] += np.sqrt(snr) * y
    return X, y
def kern(f, A, p):
    K = f(A / np.sqrt(p)) / np.sqrt(p); np.fill_diagonal(K, 0.0); return K
case = sys.argv[1]; p = int(sys.argv[2]); T = int(sys.argv[3]); g = 1e-3
res = []
for t in range(T):
    rng = np.random.default_rng([123, t])
    t0 = time.time()
    if case == "shared_sum":
        c = 0.5; n = int(p / c); X, y = draw(rng, p, n, 1.0)
        A = X.T @ X
        K = (kern(centred("tanh"), A, p) + kern(centred("gelu"), A, p)) / np.sqrt(2)
        Phi = X @ K
    elif case == "random_sum":
        c = 0.5; n = int(p / c); X, y = draw(rng, p, n, 1.0); H = 4; d = p // H
        K = np.zeros((n, n))
        for h in range(H):
            Q = rng.standard_normal((p, d)) / np.sqrt(p); R = rng.standard_normal((p, d)) / np.sqrt(p)
            A = np.sqrt(p / d) * (X.T @ Q) @ (R.T @ X)
            K += kern(centred("erf"), A, p)
        Phi = X @ K / np.sqrt(H)
    elif case == "random_concat_budget":
        c = 2.0; n = int(p / c); X, y = draw(rng, p, n, 1.0); H = 2; d = p // H; v = 0.5
        blocks = []
        for h in range(H):
            Q = rng.standard_normal((p, d)) / np.sqrt(p); R = rng.standard_normal((p, d)) / np.sqrt(p)
            A = np.sqrt(p / d) * (X.T @ Q) @ (R.T @ X)
            K = kern(centred("tanh"), A, p)
            P, _ = np.linalg.qr(rng.standard_normal((p, int(v * p))))  # p x vp orthonormal columns
            blocks.append(P.T @ X @ K)
        Phi = np.vstack(blocks)
    ea, er = err(Phi, y, g), err(X, y, g)
    res.append((ea, er)); print(t, ea, er, ea - er, f"{time.time()-t0:.1f}s", flush=True)
r = np.array(res); m = r.mean(0); se = r.std(0, ddof=1) / np.sqrt(len(r))
print(case, p, "att", m[0], se[0], "ridge", m[1], se[1], "diff", (r[:,0]-r[:,1]).mean(), (r[:,0]-r[:,1]).std(ddof=1)/np.sqrt(len(r)))
