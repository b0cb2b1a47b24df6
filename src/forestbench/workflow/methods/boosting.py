"""Gradient tree boosting (thesis ch. 6): forestbench's own family, the single-target forests it is compared with,
and the boosting libraries a researcher would otherwise use (the ``peers`` optional dependencies)."""
from forestbench.workflow.methods import peers_extra, register
from forestbench.workflow.resources import DEFAULT_DENSITY, Cost, candidate_features, split_outputs

# Calibrated on benchmarks/bench_boosting.py (quiet-machine equivalents): friedman1 n=300 p=5 stumps about 6 us per
# iteration at d=1 and 39 us per gbmort iteration at d=16; delicious-sized gbrt-rpo about 0.2 s per iteration.
#: seconds per (sample x candidate feature x split-target factor) of one tree level (presorted builder)
C_TREE = 1.5e-9
#: seconds per (sample x output) of one iteration's gradient, line search and score update, square loss
C_OUTPUT = 4.0e-9
#: the logistic line search takes 3-4 passes over the samples per output, the absolute loss sorts them
LOSS_FACTOR = {"square": 1.0, "absolute": 3.0, "logistic": 4.0}
#: fixed cost of one iteration (tree bookkeeping, projection draw), seconds
C_ITERATION = 1.0e-6
#: the presort of sparse (0/1) inputs against dense ones: measured 0.24-0.30 of the dense charge on the five sparse
#: multi-label sets (their columns are mostly one run of zeros)
SPARSE_PRESORT = 0.3
#: seconds per (sample x feature) of the presorted builder's stable partition of every feature's order at a split
#: whose children are split further (tree/_presort.pyx: every feature's node range is moved, whatever its values).
#: From st-gbrt's per-stage CPU on enron's training part (1123 x 1001, 0/1 inputs; 53 trees a stage): 1.4, 2.2 and
#: 2.3 ms a tree at 3, 5 and 8 leaves on sqrt(p) features, against 0.2 ms charged before. On sparse inputs it is
#: most of a deep tree's cost, which the density-scaled split search leaves out
C_PARTITION = 1.0e-9
#: seconds per (sample x output x projected column) of projecting the gradient (gbrt-rpo, gbrt-relabel-rpo) by the
#: loop's blocked sum over the projection's non-zero entries, the path of the sparse projections (sub-sampling,
#: Achlioptas, sparse): 0.31 ns measured on the delicious-like problem of benchmarks/bench_relabel_q.py (q = 100 and
#: 983, when the Gaussian one took this path too), with a margin
C_PROJECT = 0.4e-9
#: the same for the projections without zero entries (Gaussian, Rademacher), which the loop projects by one BLAS
#: product (boosting/_loop.pyx, ``_project_dense``): 0.06-0.07 ns from the growth of a stage's time between q = 491
#: and 983 on that problem, less the split search's share of it, with a margin
C_PROJECT_BLAS = 0.08e-9
#: the projections the loop projects by the BLAS product, onto more than BLAS_ABOVE_Q columns (up to one block of
#: the loop, boosting/_loop.pyx PROJECT_BLOCK, the loop is as fast; tests/test_plan.py checks the two agree)
DENSE_PROJECTIONS = ("gaussian", "rademacher")
BLAS_ABOVE_Q = 8


def _int(value, default):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else default


def boosting_cost(n, p, d, params, *, sparse=False, density=None, mode="mort"):
    """Fit + predict seconds and model MB of one boosting variant: a presort (n p log n), then per iteration a tree
    over the split targets (q outputs; st-gbrt: one output, d trees per iteration) and the per-output work."""
    import math

    m = _int(params.get("n_estimators"), 100)
    leaves = _int(params.get("max_leaf_nodes"), 8)
    k = candidate_features(params.get("max_features"), p)
    loss = params.get("loss", "square")
    factor = LOSS_FACTOR.get(loss, 10.0)
    levels = max(1.0, math.log2(leaves))
    if mode == "st":            # d single-output trees per iteration
        trees, q, width, outputs = m * d, 1, 1, 1
    elif mode == "rpo":         # one scalar tree and one d-vector per iteration
        trees, q, width, outputs = m, 1, 1, d
    else:                       # vector leaves; split search on q projected (or d) outputs
        trees, q, width, outputs = m, split_outputs(params, d), d, d
    presort = n * p * math.log2(max(n, 2)) * 1e-8
    if sparse or density is not None:
        # sparse inputs (0/1 word indicators, densified for the loop): a feature constant in a node is skipped, the
        # run of its zeros is passed over and the targets are summed over its non-zero rows only
        # (tree/_presort.pyx), and a column that is one long run sorts fast. The kernel sums a two-valued feature
        # over the rows holding its rarer value, whichever that is, so dense two-valued inputs whose registry
        # entry gives `input_density` (the share of entries holding their column's rarer value: genbase, whose
        # inputs are 0/1 with the 0 rare) take this path too. Fitted on stumps of gbmort on the
        # training parts of medical, enron, bibtex, corel5k and delicious (fixed and per-stage CPU separated; their
        # T in tests/data/budget_reference_measured_cpu.json): the split search by the registry's input density,
        # the presort by SPARSE_PRESORT
        share = min(1.0, density or DEFAULT_DENSITY)
        # the partitions of a best-first tree of L leaves: L - 2 splits (the last one partitions nothing); on sparse
        # inputs a split mostly cuts a few rows off, so the rows partitioned grow slowly with L (measured: 1, 1.6
        # and 1.7 times n at 3, 5 and 8 leaves; sqrt(log2(L - 1)) gives 1, 1.4 and 1.7). A stump partitions none
        partition = C_PARTITION * n * p * math.sqrt(math.log2(max(leaves - 1, 1)))
        tree = C_TREE * n * share * (k * (1.0 + q / 4.0) * levels + p) + partition + C_ITERATION
        presort *= SPARSE_PRESORT
    else:
        tree = C_TREE * n * (k * (1.0 + q / 4.0) * levels + p) + C_ITERATION
    seconds = presort + trees * (tree + C_OUTPUT * n * outputs * factor + _projection_seconds(n, d, params, mode))
    nodes = 2 * leaves - 1
    model_mb = trees * (nodes * 40 + leaves * 8 * width + (8 * d if mode == "rpo" else 0)) / 2 ** 20
    return Cost(seconds * 1.25, model_mb)


def _projection_seconds(n, d, params, mode):
    """One iteration's projection of the n x d gradient onto q columns (gbrt-rpo: q = 1; gbrt-relabel-rpo: its
    ``n_components``): a BLAS product for a Gaussian or Rademacher projection onto more than BLAS_ABOVE_Q columns;
    otherwise by the projection's non-zero entries, all of a Gaussian or Rademacher one, a third of an Achlioptas
    one, 1 / sqrt(d) of a sparse one, one a column of a sub-sampling (the estimators' default). 0 for st-gbrt and
    gbmort, which project nothing."""
    import math

    from forestbench.workflow.resources import _projects, split_outputs

    if mode == "st" or (mode == "mort" and not _projects(params)):
        return 0.0
    kind = params.get("output_projection")
    q = 1 if mode == "rpo" else split_outputs(params, d)
    # gbrt-rpo under the logistic loss sums its one projected column straight from the kept exp(2 y f), entry by
    # entry, whatever the projection
    if kind in DENSE_PROJECTIONS and q > BLAS_ABOVE_Q and not (mode == "rpo" and params.get("loss") == "logistic"):
        return C_PROJECT_BLAS * n * d * q
    share = {"gaussian": 1.0, "rademacher": 1.0, "achlioptas": 1.0 / 3.0,
             "sparse": 1.0 / math.sqrt(max(d, 1))}.get(kind, 1.0 / max(d, 1))
    return C_PROJECT * n * d * q * share


#: seconds per (sample x output) of a stage's per-output work as ``per_stage: sklearn_trees_plus_outputs`` measures
#: it (the stage's CPU less its trees', ``selection.output_stage_seconds``), by loss: on the fit rows of corel5k
#: (3600 x 374) and cal500 (200 x 174), 1.9-3.2 ns square and 4.9-10.5 ns logistic over the four methods at
#: 2 and 8 leaves (the model's C_OUTPUT * LOSS_FACTOR, calibrated on whole fits, charges 4 and 16 ns)
C_OUTPUT_WORK = {"square": 3.0e-9, "logistic": 8.0e-9}


def stage_output_cost(mode):
    """The registry's ``output_cost`` of a boosting method: one stage's per-output work, O(n d) for each of
    the four (st-gbrt's d trees of one output each, gbmort's and the projected trees' one tree on d outputs),
    with the projection of the gradient where the method projects it."""
    def cost(n, d, params):
        per = C_OUTPUT_WORK.get(params.get("loss", "square"), 3 * C_OUTPUT_WORK["logistic"])
        return per * n * d + _projection_seconds(n, d, params, mode)

    return cost


def st_boosting_cost(n, p, d, params, *, sparse=False, density=None):
    return boosting_cost(n, p, d, params, sparse=sparse, density=density, mode="st")


def rpo_cost(n, p, d, params, *, sparse=False, density=None):
    return boosting_cost(n, p, d, params, sparse=sparse, density=density, mode="rpo")


def artificial_cost(n, p, d, params, *, sparse=False, density=None):
    # the oracle fits one model per output only with the single-target strategy; the chain and group strategies
    # fit one single-output model (on the first output, on the outputs' mean) and replicate it
    outputs = d if params.get("strategy", "first_output") == "single_target" else 1
    return boosting_cost(n, p, outputs, params, sparse=sparse, density=density, mode="st")


def single_target_forest_cost(n, p, d, params, *, sparse=False, density=None, label_density=None, task=None):
    """d forests of one output each. On 0/1 labels (``label_density``, the registry's labels per row over d) each is
    charged as a forest on a label of the mean frequency, whose trees stop at pure nodes
    (``resources.label_forest_cost``): that charge is concave in the frequency, so d times it bounds the sum over
    labels of any frequencies with that mean. A multi-label set whose registry entry gives no labels per row is
    charged at frequency 0.5, the largest. Other outputs grow fully grown regression trees (``forest_cost``)."""
    from forestbench.workflow.resources import forest_cost, label_forest_cost

    if label_density is None and task == "multilabel":
        label_density = 0.5
    if label_density is not None:
        one = label_forest_cost(n, p, params, label_density, sparse=sparse, density=density)
    else:
        one = forest_cost(n, p, 1, params, sparse=sparse, density=density)
    return Cost(one.fit_seconds * d, one.model_mb * d)


def logistic_step_bound(params: dict) -> str | None:
    """The revision of logistic-loss fits: their line search is bounded (``forestbench.boosting._losses``,
    ``LOGISTIC_STEP_BOUND``), which changed every fit whose unbounded step would have moved a score further."""
    return "logistic-step-bound" if params.get("loss") == "logistic" else None


# the trees of one stage, as `per_stage: sklearn_trees` budgets time them (the registry's `stage_targets`). R is the
# first stage's residuals, the outputs less their means: the negative gradient of the square loss at the constant
# start and of the logistic loss at its log-odds start alike, so the loss (and the learning rate) never changes them
def one_tree_per_output(params, R, seed):
    """st-gbrt (br-gbrt): one single-output tree per output and stage."""
    return [R[:, [j]] for j in range(R.shape[1])]


def one_shared_tree(params, R, seed):
    """gbmort: one tree on every output's residuals."""
    return [R]


def one_tree_on_projected(params, R, seed):
    """gbrt-rpo and gbrt-relabel-rpo: one tree on q projections of the residuals, drawn as the variant draws them
    (``output_projection``, ``n_components``; the estimators' defaults: a random output subspace of one output)."""
    from forestbench.projections import make_projection, project_outputs

    projection = make_projection(params.get("output_projection") or "subsample", params.get("n_components") or 1,
                                 R.shape[1], random_state=seed)
    return [project_outputs(R, projection)]


_BOOSTING = "forestbench.boosting"
register("st_gbrt", f"{_BOOSTING}:STGradientBoostingRegressor", cost=st_boosting_cost,
         revision=logistic_step_bound, stage_targets=one_tree_per_output, output_cost=stage_output_cost("st"),
         description="single-target gradient boosting (br-gbrt for multi-label): one model per output, trees "
                     "fitted round-robin (thesis ch.6)")
register("gbmort", f"{_BOOSTING}:GBMORTRegressor", cost=boosting_cost, revision=logistic_step_bound,
         stage_targets=one_shared_tree, output_cost=stage_output_cost("mort"),
         description="multi-output gradient boosting, one shared multi-output tree per iteration (thesis Alg. 6.1)")
register("gbrt_rpo", f"{_BOOSTING}:GBRTRPORegressor", cost=rpo_cost, revision=logistic_step_bound,
         stage_targets=one_tree_on_projected, output_cost=stage_output_cost("rpo"),
         description="gradient boosting on a random 1-d projection of the residuals per iteration (thesis Alg. 6.2)")
register("gbrt_relabel_rpo", f"{_BOOSTING}:GBRTRelabelRPORegressor", cost=boosting_cost,
         revision=logistic_step_bound, stage_targets=one_tree_on_projected,
         output_cost=stage_output_cost("mort"),
         description="gradient boosting on projected residuals, leaves relabelled with the residual means "
                     "(thesis Alg. 6.3)")
register("artificial_gbrt", f"{_BOOSTING}:ArtificialGBRTRegressor", cost=artificial_cost,
         revision=logistic_step_bound,
         description="the friedman1 oracle that knows the output structure (thesis Sec. 6.3.1)")
register("st_random_forest", "forestbench.forest:SingleTargetForestRegressor",
         cost=single_target_forest_cost,
         description="one forestbench random forest per output (st-rf / br-rf, thesis Sec. 6.4)")

# peers (optional extra "peers": xgboost, lightgbm, catboost), imported only when a job builds them
_PEERS = "forestbench.peers"


register("xgboost_multi_output_tree", f"{_PEERS}:XGBoostMultiOutputTree", cost=boosting_cost,
         requires=peers_extra("xgboost"),
         description="XGBoost (CPU hist) with multi_strategy='multi_output_tree': one vector-leaf tree per round")
register("xgboost_one_output_per_tree", f"{_PEERS}:XGBoostOneOutputPerTree", cost=st_boosting_cost,
         requires=peers_extra("xgboost"), description="XGBoost (CPU hist) with multi_strategy='one_output_per_tree'")
register("catboost_multi", f"{_PEERS}:CatBoostMulti", cost=boosting_cost, requires=peers_extra("catboost"),
         description="CatBoost with MultiRMSE (regression) or MultiLogloss (multi-label)")
register("lightgbm_per_output", f"{_PEERS}:LightGBMPerOutput", cost=st_boosting_cost, requires=peers_extra("lightgbm"),
         description="LightGBM, one model per output")
register("sklearn_gbrt_per_output", f"{_PEERS}:SklearnGBRTPerOutput", cost=st_boosting_cost,
         description="scikit-learn GradientBoostingRegressor, one model per output")
