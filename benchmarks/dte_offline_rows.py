"""Offline rows of the DTE paper's Tables 4-9, fold by fold, outside Snakemake (for a loaded machine where only a
few folds fit in the time available): yeast (DS=yeast, default) or sf2 (DS=sf2), the pipeline's ``dte_cv`` folds
(shuffled 10-fold CV of all rows, seed 0), one JSON per (method, fold) in OUT, resumable.

Methods: rf_et (150 trees), rf_et50, x_te/te/x_os/x_os_te (150 trees) or the same with suffix 50 (50 trees per
forest), 10 layers, PCA size 0.05 of min(rows, nodes) (not tuned), every layer kept to record the test score per
layer; ecc, mlp, mlknn, rakel, mldf:<metric>.

Usage: DS=yeast OUT=benchmarks/out/dte_yeast python benchmarks/dte_offline_rows.py METHOD[,METHOD...] FOLD[,FOLD...]
The full protocol (PCA size tuned by inner CV) is the dte_tables_5_9 / dte_table_4 experiments of config/thesis.yaml.
"""
import json
import os
import sys
import time
import resource
from pathlib import Path
import numpy as np
from forestbench.datasets.embedded import river_yeast
from forestbench.datasets.splits import make_splits
from forestbench.deep._cascade import DeepTreeEnsemble
from forestbench.peers import _dte_competitors as C
from forestbench import metrics as M
OUT = Path(os.environ.get("OUT", "benchmarks/out/dte_yeast"))
METRICS = ["hamming_loss", "ranking_loss", "one_error", "micro_average_precision", "micro_auc"]
PCA = [0.05]
def make(name, seed):
    if name == "rf_et":
        return C.RandomForestExtraTrees(150, random_state=seed)
    if name == "rf_et50":
        return C.RandomForestExtraTrees(50, random_state=seed)
    if name.endswith("oob50"):
        return DeepTreeEnsemble(name[:-5].upper(), n_estimators=50, max_layers=10, pca_fractions=PCA,
                                keep_all_layers=True, pruning_score="oob", random_state=seed)
    if name.endswith("50"):
        return DeepTreeEnsemble(name[:-2].upper(), n_estimators=50, max_layers=10, pca_fractions=PCA,
                                keep_all_layers=True, random_state=seed)
    if name in ("x_te", "te", "x_os", "x_os_te"):
        return DeepTreeEnsemble(name.upper(), n_estimators=150, max_layers=10, pca_fractions=PCA,
                                keep_all_layers=True, random_state=seed)
    if name.startswith("mldf"):
        return C.MultiLabelDeepForest(metric=name.split(":")[1], random_state=seed)
    return {"ecc": lambda: C.EnsembleOfClassifierChains(random_state=seed),
            "erc": lambda: C.EnsembleOfRegressorChains(random_state=seed),
            "mlp": lambda: C.TunedMLP(random_state=seed),
            "mlknn": lambda: C.TunedMLkNN(random_state=seed),
            "rakel": lambda: C.RakelOverlapping(random_state=seed)}[name]()

DS = os.environ.get("DS", "yeast")
if DS == "sf2":
    from forestbench.datasets.embedded import river_sf2
    d = river_sf2()
    X = d.X
    Y = np.asarray(d.Y, dtype=float)
    METRICS = ["arrmse"]
    OUT = Path(os.environ.get("OUT", "benchmarks/out/dte_sf2"))
else:
    d = river_yeast()
    X = d.X
    Y = d.Y.toarray()
splits = make_splits({"type": "kfold", "n_splits": 10, "repeats": 1}, X.shape[0])
OUT.mkdir(parents=True, exist_ok=True)
for fold in map(int, sys.argv[2].split(",")):
    for name in sys.argv[1].split(","):
        f = OUT / f"{name.replace(':', '-')}_fold{fold}.json"
        if f.exists():
            continue
        tr, te = splits[fold]
        est = make(name, fold)
        t0 = time.perf_counter()
        est.fit(X[tr], Y[tr])
        fit_s = time.perf_counter() - t0
        P = est.predict(X[te])
        rec = {"method": name, "fold": fold, "fit_s": fit_s,
               "scores": {m: M.get_metric(m)(Y[te], P, Y[tr]) for m in METRICS},
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        if hasattr(est, "run_info_"):
            rec["info"] = est.run_info_()
        if hasattr(est, "staged_predict"):
            lm = M.get_metric(METRICS[-1])
            rec["test_layer_scores"] = [lm(Y[te], S, Y[tr]) for S in est.staged_predict(X[te])]
        if hasattr(est, "fit_time_split_"):
            rec["time_split"] = est.fit_time_split_
        f.write_text(json.dumps(rec, indent=1))
        print(name, fold, round(fit_s, 1), {k: round(v, 4) for k, v in rec["scores"].items()},
              rec.get("info", {}).get("n_layers"), flush=True)
        del est
