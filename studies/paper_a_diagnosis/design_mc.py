"""The model's design Monte Carlo for one A3 group, as predict_log_error runs it (seed = the check's finite seed,
se_target = FINITE_SE['paper'] = 0.005), continued past its stopping point to `--total` designs: is the stopped
mean biased (optional stopping), and how is E[log err | X] distributed over designs (skew)?
python studies/paper_a_diagnosis/design_mc.py --levels 0 6 --total 400 60 --out F"""
import argparse, json, math, time, numpy as np, torch
torch.set_num_threads(1)
from scipy import stats
from verify.context import CheckContext
from verify.checks.paper_a_rates import design_a3
from verify.checks.paper_a_rates import FINITE_SE, model_for
from numerics import error_model as em
ap = argparse.ArgumentParser()
ap.add_argument("--group", default="d=30, sigma/10"); ap.add_argument("--levels", type=int, nargs="+")
ap.add_argument("--total", type=int, nargs="+"); ap.add_argument("--out", required=True)
a = ap.parse_args()
ctx = CheckContext(profile="paper", check_id="A3")
D = design_a3(ctx); g = [g for g in D.groups if g.label == a.group][0]
m = model_for(g.config); cfg = g.config
seed = ctx.design_seed("finite", cfg["d"], cfg["N"], cfg["r"], cfg["P"])
ridge, se_t = float(D.trial_extra["ridge"]), FINITE_SE["paper"]
for li, tot in zip(a.levels, a.total):
    K, M = g.K[li], g.M[li]; t0 = time.time()
    ref = em.predict_log_error(m, K, cfg["P"] - 2, M, ridge=ridge, with_A=True, seed=seed,
                               stopping=em.DesignStopping(se_target=se_t))
    vals, n_stop = [], None
    for j in range(max(tot, 1)):
        if n_stop is None and len(vals) >= 4 and np.std(vals, ddof=1) / math.sqrt(len(vals)) <= se_t:
            n_stop = len(vals)
        if n_stop is not None and j >= tot:
            break
        X = m.sample_tokens(M, np.random.default_rng([seed, 13, j]))
        ev = em.EvalSet(m, 2**14, (seed, j))
        vals.append(em.conditional_parts(m, K, cfg["P"] - 2, X, ridge, True, ev)["elog"])
        if len(vals) >= 200 and n_stop is None:
            n_stop = 200
    v = np.array(vals); n_stop = n_stop or len(v)
    rec = dict(K=K, M=M, check_value=ref["log_error"], check_se=ref["se"], check_n=ref["n_designs"], n_stop=n_stop,
               stopped_mean=float(v[:n_stop].mean()), n=len(v), mean=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(len(v))),
               sd=float(v.std(ddof=1)), skew=float(stats.skew(v)), vals=v.tolist(), time=time.time() - t0)
    open(a.out, "a").write(json.dumps(rec) + "\n")
    print({k: (round(x, 5) if isinstance(x, float) else x) for k, x in rec.items() if k != "vals"}, flush=True)
