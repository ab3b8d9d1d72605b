"""Summary tables of .cache/a3diag/*.jsonl (diag.py output). python studies/paper_a_diagnosis/table.py"""
import json, math, glob, numpy as np
print("== noise-free: nonlinear bias vs linearised bias (model 'bias'), b0, angle, objective vs A* ==")
for l in open(".cache/a3diag/nf_d30_low.jsonl"):
    r = json.loads(l); nf, mA = r["nf"], r["model_A"]
    print(f"K={r['K']:3d} M={r['M']:6d} j={r['design']} lin-bias {mA['bias']:.4e} b0 {mA['b0']:.4e} nonlin {nf['err']:.4e} "
          f"ratio {nf['err']/mA['bias']:.4f} angle {nf['angle']:.1e} obj/obj(A*)-1 {nf['obj']/nf['obj_known']-1:+.1e} "
          f"obj/lin-obj-1 {nf['obj']/mA['obj']-1:+.1e} refits {nf['refits']}")
rows = {}
for l in open(".cache/a3diag/nf_d30_low.jsonl"):
    r = json.loads(l); rows.setdefault(r["M"], []).append(math.log(r["nf"]["err"] / r["model_A"]["bias"]))
Ms = sorted(rows); x = np.log(Ms); y = np.array([np.mean(rows[m]) for m in Ms])
print("mean log(nonlin/lin bias) per level:", dict(zip(Ms, np.round(y, 4))), "OLS slope over levels %.4f" % np.polyfit(x, y, 1)[0])
print("== noisy: simulated mean log err vs model E log err, same design ==")
lev = {}
for f in sorted(glob.glob(".cache/a3diag/noise_d30_low_L*.jsonl")):
    for l in open(f):
        r = json.loads(l); nz = r["noisy"]
        L, Lk = np.array(nz["logs"]), np.array(nz["logs_known"])
        gap, gse = L.mean() - r["model_A"]["elog"], L.std(ddof=1) / math.sqrt(L.size)
        gk, gkse = Lk.mean() - r["model_known"]["elog"], Lk.std(ddof=1) / math.sqrt(Lk.size)
        print(f"K={r['K']:3d} M={r['M']:6d} j={r['design']} n={L.size}: model Elog {r['model_A']['elog']:.4f} sim {L.mean():.4f} "
              f"+- {gse:.4f} gap {gap:+.4f} | A*-known gap {gk:+.4f} +- {gkse:.4f} | max obj/obj(A*) {max(nz['obj_ratio']):.4f} "
              f"refits {sum(nz['refits'])} median angle {np.median(nz['angle']):.1e}")
        lev.setdefault(r["M"], []).append((gap, gse ** 2, gk, gkse ** 2))
for M, v in sorted(lev.items()):
    v = np.array(v); n = len(v)
    print(f"M={M}: mean gap {v[:,0].mean():+.4f} +- {math.sqrt(v[:,1].sum())/n:.4f} (noise SE; design spread SE "
          f"{v[:,0].std(ddof=1)/math.sqrt(n):.4f}); A*-known {v[:,2].mean():+.4f} +- {math.sqrt(v[:,3].sum())/n:.4f}")
Ms = sorted(lev)
if len(Ms) >= 2:
    g0, g1 = [np.array(lev[m])[:, 0] for m in (Ms[0], Ms[-1])]
    d = g1.mean() - g0.mean(); se = math.hypot(g0.std(ddof=1) / math.sqrt(g0.size), g1.std(ddof=1) / math.sqrt(g1.size))
    print(f"implied slope offset (gap(top)-gap(bottom))/ln(M ratio) = {d/math.log(Ms[-1]/Ms[0]):+.4f} +- {se/math.log(Ms[-1]/Ms[0]):.4f}")
