"""l1-compressed extra-trees (thesis ch. 7) and the linear Lasso baseline of its Table 7.1."""
from forestbench.workflow.methods import register
from forestbench.workflow.resources import Cost, forest_cost, tree_nodes

#: measured single-thread seconds of one FS_eps step per node-indicator column and output (arg-max + update)
FS_STEP_SECONDS = 5e-9
#: FS_eps steps after which the path has usually reached the training fit (it ends there, whatever max_t)
TYPICAL_PATH_STEPS = 600


def compression_cost(n, p, d, params, *, sparse=False, density=None):
    """Cross-validation over t grows ``cv`` forests on (cv - 1)/cv of the rows plus the final forest, and runs
    FS_eps on each; the model kept is a small fraction of the forest, but the forest is held during the fit."""
    params = params or {}
    forest = forest_cost(n, p, d, params, sparse=sparse, density=density)
    cv = 0 if params.get("t") is not None else int(params.get("cv", 10))
    n_estimators = int(params.get("n_estimators", 100))
    split = params.get("min_samples_split", 2)
    leaf = max(1, int(split) // 2) if isinstance(split, int) else 1
    columns = n_estimators * tree_nodes(n, leaf)
    eps = float(params.get("epsilon", 0.01))
    t = params.get("t")
    steps = min(float(t if t is not None else params.get("max_t", 10.0)) / eps, TYPICAL_PATH_STEPS / (eps / 0.01))
    fs_seconds = FS_STEP_SECONDS * steps * columns * d
    seconds = (1 + cv * (cv - 1) / max(cv, 1)) * forest.fit_seconds + (cv + 1) * fs_seconds
    indicator_mb = n * n_estimators * 16.0 * 2 * max(1.0, (n / leaf) ** 0.5) / 2**20  # CSR + CSC of Z
    return Cost(seconds, forest.model_mb + indicator_mb)


def lasso_cost(n, p, d, params, *, sparse=False, density=None):
    """Coordinate descent over a grid of penalties, ``cv`` + 1 times."""
    params = params or {}
    cv = int(params.get("cv", 10))
    alphas = int(params.get("n_alphas", 100))
    return Cost(1e-8 * (cv + 1) * alphas * 20 * n * p * d, 8.0 * p * d / 2**20)


# the dataset's task decides between regression and classification (never the values of y: {3, 7} is a
# regression target); a multiclass target is refused by the estimator ("binary classification only")
_RET_TASKS = {"regression": {"loss": "squared"}, "multioutput_regression": {"loss": "squared"},
              "multilabel": {"loss": "squared"}, "binary": {"loss": "zero_one"}, "multiclass": {"loss": "zero_one"}}
register("compressed_extra_trees", "forestbench.compression:CompressedExtraTreesRegressor",
         cost=compression_cost, task_params=_RET_TASKS,
         description="l1-compressed extra-trees (rET): FS_eps on the forest's node indicators, t by CV, "
                     "rebuilt smaller forest (thesis ch.7)")
register("lasso_cv", "forestbench.linear:LassoCVBaseline", cost=lasso_cost,
         description="Lasso on whitened inputs, penalty by K-fold CV; complexity = selected inputs "
                     "(thesis Table 7.1 baseline)")
