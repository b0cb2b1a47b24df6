"""Readings of the DTE paper's measures for archived runs (config/README.md, "Deep tree-ensembles"): each archived
run of one dataset is refitted from its record's specification (method, parameters, seed) on its split, and its test
outputs are scored under several readings of the measure.

- Multi-label (``dte_tables_5_9``): on the scores, as the workflow does, and on the outputs thresholded at 0.5 with
  ties counted as errors, the reading the paper's competitor cells suggest. The refit's score-based ranking loss
  must equal the archived one (checked), so both readings are of the same model.
- Multi-target (``--experiment dte_table_4``): aRRMSE with the training fold's mean as the reference (the workflow's,
  checked against the archived score), with the test fold's own mean, as RMSE over the training standard
  deviation, and pooled (every fold's squared errors and reference errors summed before the ratio, the training
  fold's mean as the reference of its rows); beside it the largest per-fold aRRMSE, since a test fold where a rare
  target barely varies makes one fold's ratio large.

With ``--folds contiguous`` each archived fold's model (same method, parameters and seed) is refitted on the folds
of an unshuffled 10-fold split of the file's row order instead (scikit-learn's ``KFold`` default, one reading of the
paper's "split them using 10 fold cross-validation"); its scores are then not the archived ones, so no check.

Usage (the prepared data and splits from ``snakemake --until split`` with the same configuration):
    python benchmarks/dte_readings.py --dataset flags --data data [--archive archive] [--variants ml_knn mlp ...]
    python benchmarks/dte_readings.py --experiment dte_table_4 --dataset sf1 --data data --variants rf_et
    python benchmarks/dte_readings.py --experiment dte_table_4 --dataset enb --data data --variants rf_et \
        --folds contiguous
Prints one line per variant: means over the folds of each reading.
"""
import argparse
import gzip
import json
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, hamming_loss, label_ranking_loss, roc_auc_score

from forestbench.workflow.methods import get_method
from forestbench.workflow.runner import _rows, load_dataset, load_split


def ranking_loss_ties(Y, S):
    """Ranking loss where a (relevant, irrelevant) pair with equal outputs counts as an error (rows with no
    relevant or no irrelevant label are left out)."""
    losses = [np.mean(s[y == 1][:, None] <= s[y == 0][None, :]) for y, s in zip(Y, S) if 0 < y.sum() < len(y)]
    return float(np.mean(losses))


def one_error(Y, S, ties_are_errors=False):
    errors = []
    for y, s in zip(Y, S):
        top = np.flatnonzero(s == s.max())
        errors.append(float((ties_are_errors and len(top) > 1) or y[top[0]] == 0))
    return float(np.mean(errors))


def readings(Y, S):
    H = (S >= 0.5).astype(float)
    return {"ranking_loss": label_ranking_loss(Y, S), "ranking_loss_thresholded": ranking_loss_ties(Y, H),
            "hamming_loss": hamming_loss(Y, H),
            "micro_average_precision": average_precision_score(Y.ravel(), S.ravel()),
            "micro_average_precision_thresholded": average_precision_score(Y.ravel(), H.ravel()),
            "micro_auc": roc_auc_score(Y.ravel(), S.ravel()),
            "micro_auc_thresholded": roc_auc_score(Y.ravel(), H.ravel()),
            "one_error": one_error(Y, S), "one_error_thresholded": one_error(Y, H, ties_are_errors=True)}


def arrmse_readings(Y, P, Y_train):
    """Per-fold aRRMSE readings, with the sums the pooled reading needs."""
    err = ((Y - P) ** 2).sum(axis=0)
    ref_train = ((Y - Y_train.mean(axis=0)) ** 2).sum(axis=0)
    ref_test = ((Y - Y.mean(axis=0)) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"arrmse": float(np.mean(np.sqrt(err / ref_train))),
                "arrmse_test_mean": float(np.mean(np.sqrt(err / ref_test))),
                "rmse_over_train_std": float(np.mean(np.sqrt(err / len(Y)) / Y_train.std(axis=0))),
                "_err": err, "_ref": ref_train}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--data", type=Path, default=Path("data"))
    ap.add_argument("--archive", type=Path, default=Path("archive"))
    ap.add_argument("--experiment", default="dte_tables_5_9")
    ap.add_argument("--variants", nargs="*")
    ap.add_argument("--folds", choices=["archived", "contiguous"], default="archived",
                    help="the archived split (default) or unshuffled 10-fold CV of the row order")
    args = ap.parse_args(argv)
    # one BLAS thread, as the workflow's fit jobs run (runner.run_job): OpenBLAS's spinning threads on a machine
    # already busy with a run turned a 20 s refit into an hour of system time
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1):
        _main(args)


def _main(args):
    runs = args.archive / args.experiment / "runs" / args.dataset
    ds = load_dataset(args.data / "prepared" / f"{args.dataset}.npz")
    Y = np.asarray(ds.Y.toarray() if hasattr(ds.Y, "toarray") else ds.Y, dtype=float)
    for variant in args.variants or sorted(p.name for p in runs.iterdir()):
        folds = []
        for path in sorted((runs / variant).glob("repeat-*.json.gz")):
            record = json.loads(gzip.decompress(path.read_bytes()))
            spec = record["spec"]
            train, test, _ = load_split(args.data / "splits" / args.dataset / f"{spec['protocol']}.npz",
                                        int(spec["repeat"]))
            if args.folds == "contiguous":
                test = np.array_split(np.arange(len(Y)), 10)[int(spec["repeat"])]   # KFold(10) without shuffle
                train = np.setdiff1d(np.arange(len(Y)), test)
            model = get_method(spec["method"]).build(dict(spec["params"]), spec["seed"], ds.task)
            model.fit(_rows(ds.X, train), Y[train])
            P = np.asarray(model.predict(_rows(ds.X, test)), dtype=float)
            measure = "arrmse" if "regression" in ds.task else "ranking_loss"
            scores = arrmse_readings(Y[test], P, Y[train]) if measure == "arrmse" else readings(Y[test], P)
            if args.folds == "archived" and not np.isclose(scores[measure], record["scores"][measure]):
                raise SystemExit(f"{path}: the refit's {measure} {scores[measure]} is not the archived "
                                 f"{record['scores'][measure]}: not the archived model")
            folds.append(scores)
        means = {k: round(float(np.mean([f[k] for f in folds])), 3) for k in folds[0] if not k.startswith("_")}
        if "_err" in folds[0]:
            pooled = sum(f["_err"] for f in folds) / sum(f["_ref"] for f in folds)
            means["arrmse_pooled"] = round(float(np.mean(np.sqrt(pooled))), 3)
            means["arrmse_worst_fold"] = round(max(f["arrmse"] for f in folds), 3)
        print(variant, f"({len(folds)} folds)", json.dumps(means), flush=True)


if __name__ == "__main__":
    main()
