"""Generate ``hermite_reference.json``: Gaussian moments of the activations, by mpmath quadrature at 30 digits.

For a standard Gaussian ``xi`` and an activation ``f``: ``a0 = E f(xi)``, ``a1 = E xi f(xi)``,
``a2 = E He_2(xi) f(xi) / sqrt 2`` (``He_2 = xi^2 - 1``) and ``nu = Var f(xi)``, the quantities
:func:`theory.hermite_moments` returns. The recipe is independent of the project's code (mpmath's
tanh-sinh quadrature on ``(-inf, 0]`` and ``[0, inf)``, split at the kink of relu/sign), so the test that reads
the file compares two routes. Rerun after adding an activation:

    python tests/reference/make_hermite_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

mp.mp.dps = 30

ACTIVATIONS = {
    "tanh": mp.tanh,
    "erf": mp.erf,
    "relu": lambda t: t if t > 0 else mp.mpf(0),
    "sign": lambda t: mp.sign(t),
    "cos": mp.cos,
    "sin": mp.sin,
    "gelu": lambda t: t * mp.ncdf(t),
    "silu": lambda t: t / (1 + mp.exp(-t)),
    "softplus": lambda t: mp.log1p(mp.exp(t)),
}


def gaussian_mean(g) -> mp.mpf:
    w = lambda t: g(t) * mp.exp(-t * t / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
    return mp.quad(w, [-mp.inf, 0]) + mp.quad(w, [0, mp.inf])


def moments(f) -> dict[str, str]:
    a0 = gaussian_mean(f)
    a1 = gaussian_mean(lambda t: t * f(t))
    a2 = gaussian_mean(lambda t: (t * t - 1) * f(t)) / mp.sqrt(2)
    nu = gaussian_mean(lambda t: f(t) ** 2) - a0**2
    return {k: mp.nstr(v, 20) for k, v in (("a0", a0), ("a1", a1), ("a2", a2), ("nu", nu))}


def main() -> None:
    out = {"generator": "tests/reference/make_hermite_reference.py", "mpmath_dps": mp.mp.dps,
           "moments": {name: moments(f) for name, f in ACTIVATIONS.items()}}
    path = Path(__file__).with_name("hermite_reference.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
