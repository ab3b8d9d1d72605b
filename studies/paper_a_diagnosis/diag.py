"""A3 diagnosis: estimator vs finite-M error model on fixed designs (docs/paper_a_finite_m.md, "Why A3 sat above its model").

python studies/paper_a_diagnosis/diag.py --group "d=30, sigma/10" --profile paper --levels 0 6 --designs 4 --noise 0 --out F
  for each level (K, M) and design j (X = model.sample_tokens(M, default_rng([fseed, 13, j])), the model's own
  design draws), on one eval set of n_eval pairs shared by model and estimator:
  - model pieces (numerics.error_model.conditional_parts): linearised noiseless error `bias`, the part
    b0 orthogonal to the noise directions, E log Q, E Q; the same with A = A* known;
  - estimator (trial's protocol: restarts, ridge, max_iter, stall refits with threshold max(2 s^2, 1.5 obj_known))
    on noise-free Y0 = R_{g*}[X]: error, objective vs objective at A*, angle to A*, refits;
  - `noise` noisy realisations Y0 + sigma xi: estimator log error (and the A*-known fit's).
"""
import argparse, json, math, time, warnings
import numpy as np, torch
torch.set_num_threads(1)
from verify.context import CheckContext
from verify.checks.paper_a_rates import design_a3
from verify.checks.paper_a_rates import RANGE_Q, model_for
from numerics.estimator import PairwiseInteractionEstimator
from numerics import error_model as em
warnings.filterwarnings("ignore")

ap = argparse.ArgumentParser()
ap.add_argument("--group", default="d=30, sigma/10")
ap.add_argument("--profile", default="paper")
ap.add_argument("--levels", type=int, nargs="+", default=[0, 6])
ap.add_argument("--designs", type=int, default=4)
ap.add_argument("--design0", type=int, default=0)
ap.add_argument("--noise", type=int, default=0)
ap.add_argument("--n_eval", type=int, default=2**16)
ap.add_argument("--sigma_scale", type=float, default=1.0)
ap.add_argument("--out", required=True)
a = ap.parse_args()

ctx = CheckContext(profile=a.profile, check_id="A3")
D = design_a3(ctx)
g = [g for g in D.groups if g.label == a.group][0]
cfg = dict(g.config); cfg["sigma"] = cfg["sigma"] * a.sigma_scale
ex = D.trial_extra
m = model_for(cfg)
fseed = ctx.design_seed("finite", cfg["d"], cfg["N"], cfg["r"], cfg["P"])
s = cfg["P"] - 2
ridge = float(ex["ridge"])
sigma = float(cfg["sigma"])


def model_pieces(K, X, with_A, ev):
    """numerics.error_model's law of the fit on the design X (its internals), and the linearised objective."""
    q = em.conditional_parts(m, K, s, X, ridge, with_A, ev)
    S, Fy, c, p = q["S"], q["Fy"], q["c"], q["p"]
    # linearised objective (forward metric, as the estimator's: (|Y - F c|^2 + lam |c_b|^2) / (M N))
    Y0 = m.forward(None, X).reshape(-1)
    lamv = ridge * float(np.mean(np.diag(S)[:p]))
    obj = (Y0 @ Y0 - 2 * c @ Fy + c @ S @ c + lamv * c[:p] @ c[:p]) / Y0.size
    return dict(bias=q["bias"], b0=q["b0"], elog=q["elog"], mean=q["mean"], var_tr=q["var_tr"], obj=float(obj),
                tangent_coef_norm=float(np.linalg.norm(c[p:])) if with_A else 0.0)


def fit(K, X, Y, seed):
    """numerics' trial protocol on given data."""
    known = PairwiseInteractionEstimator(rank=1, degree=s, n_intervals=K, restarts=1, max_iter=int(ex["max_iter"]),
                                         ridge=ridge, range_quantile=RANGE_Q, random_state=int(seed % 2**31))
    known.fit(X, Y, A=m.A_star)
    threshold = max(2 * sigma ** 2 if Y is not None else 0.0, 1.5 * float(known.objective_))
    restarts, refits = int(ex["restarts"]), 0
    while True:
        est = PairwiseInteractionEstimator(rank=1, degree=s, n_intervals=K, restarts=restarts,
                                           max_iter=int(ex["max_iter"]), ridge=ridge, range_quantile=RANGE_Q,
                                           random_state=int((seed + 7919 * refits) % 2**31),
                                           adaptive_restarts=refits == 0)
        est.fit(X, Y)
        if est.objective_ <= threshold or refits >= 2:
            break
        refits += 1
        restarts += 4
    return est, known, refits


def err_on(est, ev):
    e = (est.interaction(ev.x, ev.y) - ev.g) ** 2
    return float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))


def angle(A):
    As = m.A_star
    c = abs(np.sum(A * As)) / (np.linalg.norm(A) * np.linalg.norm(As))
    return float(math.sqrt(max(0.0, 1 - c * c)))


out = open(a.out, "a")
for li in a.levels:
    K, M = int(g.K[li]), int(g.M[li])
    for j in range(a.design0, a.design0 + a.designs):
        t0 = time.time()
        X = m.sample_tokens(M, np.random.default_rng([fseed, 13, j]))
        ev = em.EvalSet(m, a.n_eval, (fseed, j))
        mA = model_pieces(K, X, True, ev)
        mK = model_pieces(K, X, False, ev)
        Y0 = m.forward(None, X)
        est, known, refits = fit(K, X, Y0, 1000 + j)
        e0, e0se = err_on(est, ev)
        ek0, _ = err_on(known, ev)
        rec = dict(group=a.group, sigma=sigma, K=K, M=M, design=j, model_A=mA, model_known=mK,
                   nf=dict(err=e0, err_se=e0se, err_known=ek0, obj=est.objective_, obj_known=known.objective_,
                           angle=angle(est.A_), refits=refits, n_iter=est.n_iter_, starts=est.restart_objectives_,
                           converged=bool(est.converged_)))
        logs, logs_k, objs, angs, refs = [], [], [], [], []
        for k in range(a.noise):
            rng = np.random.default_rng([fseed, 99, j, k])
            Y = Y0 + sigma * rng.standard_normal(Y0.shape)
            est, known, refits = fit(K, X, Y, 5000 + 100 * j + k)
            logs.append(math.log(err_on(est, ev)[0])); logs_k.append(math.log(err_on(known, ev)[0]))
            objs.append(est.objective_ / known.objective_); angs.append(angle(est.A_)); refs.append(refits)
        if a.noise:
            rec["noisy"] = dict(logs=logs, logs_known=logs_k, obj_ratio=objs, angle=angs, refits=refs)
        rec["time"] = time.time() - t0
        out.write(json.dumps(rec) + "\n"); out.flush()
        summ = (f"K={K} M={M} j={j}: model bias {mA['bias']:.4e} b0 {mA['b0']:.4e} E[Q] {mA['mean']:.4e} Elog {mA['elog']:.4f} | "
                f"known: model bias {mK['bias']:.4e} est {ek0:.4e} | est nf err {e0:.4e} ratio {e0/mA['bias']:.4f} "
                f"obj {est.objective_ if not a.noise else rec['nf']['obj']:.4e} lin-obj {mA['obj']:.4e} obj@A* {rec['nf']['obj_known']:.4e} "
                f"angle {rec['nf']['angle']:.2e} refits {rec['nf']['refits']}")
        if a.noise:
            summ += f" | noisy mean log {np.mean(logs):.4f} +- {np.std(logs, ddof=1)/math.sqrt(len(logs)) if len(logs)>1 else 0:.4f} (model {mA['elog']:.4f}); known {np.mean(logs_k):.4f} (model {mK['elog']:.4f})"
        print(summ, f"[{rec['time']:.0f}s]", flush=True)
