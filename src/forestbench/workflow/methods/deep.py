"""Deep tree-ensembles (DTE paper) and the competitors of its Tables 4-9."""
from __future__ import annotations

import math

from forestbench.workflow.methods import peers_extra, register
from forestbench._label_layout import grows_sparse
from forestbench.workflow.resources import (D_HALF, SPARSE_CRITERION_COST, Cost, candidate_features, forest_mb,
                                            stored_per_row)

_PAPER_FRACTIONS = (1, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95)
_VARIANTS = {"X_TE": (True, True, False), "TE": (False, True, False), "X_OS": (True, False, True),
             "X_OS_TE": (True, True, True), "X": (True, False, False)}
# The constants below were fitted (least squares on the log of the fit + predict CPU) to 85 cascades and RF+ET
# baselines of the current kernels, kept in tests/data/dte_current_measured_fit_cpu.json: 17 real rows of 44-1024
# training rows, 7-411 inputs and 2-174 outputs, 10 folds each, X_OS and the three cascades at PCA size 0.05. They
# charge the cascades 0.71-1.41x (median 1.03), RF+ET 0.77-1.64x and every dataset's total 0.77-1.33x; the PCA-size
# searches (eight fractions, inner 5-fold CV) on slump and edm, not fitted, 0.94-1.26x. The per-output node term came
# with cal500 (174 labels): without it, fitted to the rows of 2-19 outputs, cal500's cascades were charged 0.50-0.86x
# (now 0.96-1.09x). The constants before those were measured on slower forests (before the per-tree random streams
# were made lazy) and charged the same rows 0.9-2.5x (median 1.5). None of those label sets is grown as CSR; medical's
# is (``_labels``): charged as dense outputs, its archived cascades were charged 1.7x their CPU and 10x their peak
# memory, now 0.82-0.93x (tests/data/dte_sparse_labels_measured_cpu.json). genbase's 27 labels stay dense and its
# binary inputs grow small trees: charged 2.0-3.3x, not modelled (the registry does not say how many rows repeat).
_GRAM_S = 2.1e-9  # seconds per (row pair x tree) of the embedding's Gram products (the indicator kernel)
_EIGEN_S = 2.8e-10  # seconds per rows^3 of the eigen-decomposition (LAPACK, many components)
_LANCZOS_S = 2.25e-9  # seconds per (rows^2 x components) of Lanczos, up to 10 % of the rows
# The cascade's forests, per tree: a fixed cost, a sort-and-scan term and the nodes' output sums (every node of a
# tree sums its rows' outputs, whatever the candidate features). A cascade grows tens of thousands of
# small forests (150 trees x 14 forests x 10 layers, times 41 with the PCA-size search), on a few dozen to a few
# thousand rows, where the fixed cost of a tree dominates; the generic forest model (``fit_seconds``) has no fixed
# term and a slope made for larger, single-output problems: it charged the measured DTE rows 0.6x (andro, 49 rows)
# to 3.5x (edm, 154 rows) of their CPU time.
_TREE_S = 1.5e-4   # seconds per tree, fixed
_TREE_SCAN_S = 1.45e-8   # seconds per (candidate feature x row x log2 rows x (1 + outputs / 32)) per tree
_TREE_NODE_S = 4.4e-9    # seconds per (row x log2 rows x output) per tree: the nodes' output sums


def _int(params, key, default):
    value = params.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value else default


def _forests(n, p, d, trees, count, max_features):
    """Seconds of ``count`` forests of ``trees`` fully grown trees on ``n`` rows, ``p`` features, ``d`` outputs (the
    outputs the criterion works on: see :func:`_labels`)."""
    n = max(2, n)
    k = candidate_features(max_features, max(1, p))
    per_tree = _TREE_S + (_TREE_SCAN_S * k * (1.0 + d / D_HALF) + _TREE_NODE_S * d) * n * math.log2(n)
    return count * max(1, trees) * per_tree


def _labels(d, label_density):
    """(outputs the criterion works on, stored labels per row or None) of forests on a label matrix: a 0/1 matrix
    the trees grow as CSR (``forestbench._label_layout``: medical's 45 labels at 2.8 % are; the other DTE label
    sets have too few labels or too many per row) costs ``SPARSE_CRITERION_COST`` outputs per label of a row in the
    split search and the nodes' sums, and stores its leaf values sparsely, as ``resources.forest_cost`` charges it.
    Any other target: ``d`` outputs, dense leaves."""
    if label_density is None or not grows_sparse(d, label_density):
        return d, None
    per_row = label_density * d
    return max(1, min(d, math.ceil(SPARSE_CRITERION_COST * per_row))), per_row


def _eigen_seconds(n, fraction):
    """The embedding's eigen-solve for ``fraction`` of the rows as components (the solver ``TreeEmbedding`` picks)."""
    k = max(1.0, fraction * n)
    if n > 200 and k <= 0.1 * n:
        return _LANCZOS_S * n * n * k
    return _EIGEN_S * n ** 3


def _cascade(n, p, d, params, label_density=None):
    """(seconds, peak MB, seconds of layer 1's fraction-independent work) of one cascade fit on n rows."""
    outputs, per_row = _labels(d, label_density)
    has_x, has_te, has_os = _VARIANTS.get(params.get("variant", "X_TE"), (True, True, False))
    trees = _int(params, "n_estimators", 150)
    layers = _int(params, "max_layers", 10)
    os_trees = _int(params, "os_n_estimators", trees)
    folds = _int(params, "os_folds", 5)
    mf = params.get("max_features", "sqrt")
    fractions = params.get("pca_fractions") or _PAPER_FRACTIONS
    f = max(1.0 / max(n, 1), max(float(x) if not isinstance(x, int) else 1.0 / max(n, 1) for x in fractions))
    extra = (int(f * n) if has_te else 0) + (d if has_os else 0)
    width = (p if has_x else 0) + extra
    per_layer = _forests(n, width, outputs, trees, 2, mf)
    # memory: every layer's embedders and output-space fold models stay (later layers' features need them); of the
    # prediction forests only the best layer's so far and the current one's, unless every layer is kept
    prediction_mb = 2 * forest_mb(n, d, trees, labels_per_row=per_row)
    layer_mb = transient_mb = 0.0
    shared = 0.0   # layer 1 reads X whatever the PCA size: embedding forests, Gram, eigen-solve, OS CV
    if has_te:
        emb = _forests(n // 2, p, outputs, trees, 2, mf)
        pca = 2 * (_GRAM_S * n * n * trees + _eigen_seconds(n, f))
        per_layer += _forests(n // 2, width, outputs, trees, 2, mf) + pca
        shared += emb + pca
        # each embedder keeps its forest and the training rows' node indicator (a row's path: log2 n nodes per
        # tree, 12 bytes a stored node); its Gram matrices (three n x n copies) are freed after the eigen-solve
        layer_mb += 2 * (forest_mb(n // 2, d, trees, labels_per_row=per_row)
                         + 12.0 * n * trees * math.log2(max(n, 2)) / 2**20)
        transient_mb += 2 * 3 * 8.0 * n * n / 2**20
    if has_os:
        rows = n * (folds - 1) // folds
        per_layer += _forests(rows, width, outputs, os_trees, 2 * folds, mf)
        shared += _forests(rows, p, outputs, os_trees, 2 * folds, mf)
        layer_mb += 2 * folds * forest_mb(rows, d, os_trees, labels_per_row=per_row)
    kept = layers if params.get("keep_all_layers") else min(2, layers)
    return layers * per_layer, layers * layer_mb + kept * prediction_mb + transient_mb, shared


def dte_cost(n, p, d, params, *, sparse=False, density=None, label_density=None):
    """Cascade of ``max_layers`` layers: two prediction forests, two embedding forests on half the rows with a
    Gram-matrix PCA (rows^2 x trees products, rows^3 eigen-solver), 2K output-space forests; plus, when several
    PCA sizes are given, the inner search: per inner fold, layer 1's fraction-independent work once (embedding
    forests, PCA at the largest size, output-space CV: shared by the candidates) and the rest of one cascade per
    candidate."""
    seconds, mb, _ = _cascade(n, p, d, params, label_density)
    has_te = _VARIANTS.get(params.get("variant", "X_TE"), (True, True, False))[1]
    fractions = params.get("pca_fractions") or _PAPER_FRACTIONS
    if has_te and len(fractions) > 1:
        v = params.get("pca_validation", 5)
        if isinstance(v, float):
            inner_n, fits = int(n * (1 - v)), len(fractions)
        else:
            inner_n, fits = n * (int(v) - 1) // int(v), len(fractions) * int(v)
        # each candidate cascade at its own PCA size (the features it adds widen every later forest)
        shared = _cascade(inner_n, p, d, params, label_density)[2]
        candidates = sum(_cascade(inner_n, p, d, {**params, "pca_fractions": [fr]}, label_density)[0] - shared
                         for fr in fractions)
        seconds += fits // len(fractions) * (shared + candidates)
    return Cost(seconds, mb)


def rf_et_cost(n, p, d, params, *, sparse=False, density=None, label_density=None):
    trees = _int(params, "n_estimators", 150)
    outputs, per_row = _labels(d, label_density)
    return Cost(_forests(n, p, outputs, trees, 2, params.get("max_features", "sqrt")),
                2 * forest_mb(n, d, trees, labels_per_row=per_row))


_MLDF_BEST_LAYER = 3   # the layer MLDF keeps, typically (the paper's superscripts 2.5-3.9; flags, ours: 1-5)


def mldf_cost(n, p, d, params, *, sparse=False, density=None):
    """Layers up to the kept one plus ``patience`` more (growth stops there, far before ``max_layers``: charging
    all 20 layers overcharged flags' fits 3.5-4.6 times), each ``2 cv`` forests on the inputs and the labels'
    out-of-fold probabilities of both models."""
    cv = _int(params, "cv", 5)
    layers = min(_int(params, "max_layers", 20), _MLDF_BEST_LAYER + _int(params, "patience", 3))
    rows = n * (cv - 1) // cv
    seconds, mb = 0.0, 0.0
    for layer in range(layers):
        trees = min(_int(params, "max_n_estimators", 100),
                    _int(params, "first_n_estimators", 40) + layer * _int(params, "step_n_estimators", 20))
        seconds += _forests(rows, p + 2 * d, d, trees, 2 * cv, params.get("max_features", "sqrt"))
        mb = max(mb, 2 * cv * forest_mb(rows, d, trees))
    return Cost(seconds, 4 * mb)


# ERC's trees are scikit-learn's fully grown regression trees on all the inputs and, on average, half the targets:
# 1 ms per tree plus _ERC_SCAN_S per (row x log2 rows x features). Against the 10 archived rows
# (tests/data/dte_erc_measured_fit_cpu.json, 44-959 rows, 7-411 inputs) this charges 0.67-2.2x of their fit CPU; the
# generic forest model charged them up to 9x.
_ERC_TREE_S = 1e-3
_ERC_SCAN_S = 3.5e-8


def chains_cost(n, p, d, params, *, sparse=False, density=None):
    """ERC: ``n_chains`` x d fully grown regression trees, each on all the inputs and the earlier targets."""
    chains = _int(params, "n_chains", 10)
    n = max(2, n)
    per_tree = _ERC_TREE_S + _ERC_SCAN_S * n * math.log2(n) * (max(1, p) + d / 2.0)
    return Cost(chains * d * per_tree, chains * d * forest_mb(n, 1, 1))


# ECC's trees are scikit-learn's fully grown classification trees, one per label and chain, on all the inputs plus
# on average d / 2 earlier labels. A tree on a 0/1 label stops where its nodes are pure, so its depth follows the
# label's minority count m = min(rho, 1 - rho) n (rho: the registry's label density), not log2 n, and on sparse
# inputs a node reads its stored values only. Per tree: 1 ms plus _ECC_SCAN_S per (row x stored feature x
# log2(2 + 2 m)). Measured (one chain on 90 % of the rows, one thread, CPU seconds per tree): flags 1.4 ms,
# emotions 23, birds 79, scene 610, yeast 272, cal500 19, medical 13, enron 59 (genbase 2.7: its binary inputs
# are dense and its trees tiny, so it is charged far more); this gives 0.5-2.1x of those (the model before, the
# regression-tree one of ERC, charged 1.6-130x).
_ECC_TREE_S = 1e-3
_ECC_SCAN_S = 7e-8


def ecc_cost(n, p, d, params, *, sparse=False, density=None, label_density=None):
    chains = _int(params, "n_chains", 10)
    n = max(2, n)
    rho = 0.5 if label_density is None else min(max(float(label_density), 0.0), 1.0)
    minority = min(rho, 1.0 - rho) * n
    width = stored_per_row(max(1, p), sparse, density) + d / 2.0
    per_tree = _ECC_TREE_S + _ECC_SCAN_S * n * width * math.log2(2.0 + 2.0 * minority)
    return Cost(chains * d * per_tree, chains * d * forest_mb(n, 1, 1))


# dte_mlp (an inner CV over 4 settings, then the refit) stops on its tolerance, after fewer epochs the more rows an
# epoch holds: its CPU time grows as about n^0.67, slowly with the inputs and, through the output layer, with the
# outputs; a multi-label MLP (logistic outputs, tuned on micro-AUC) runs about 1.6x as long as a regression one of
# the same shape. Fitted on the 33 archived rows (tests/data/dte_mlp_measured_fit_cpu.json: 44-2175 training rows,
# 7-1449 inputs, 2-174 outputs): 0.68-1.40x of their time. Without the task's factor, the rows of the previous fit
# (at most 959 training rows) charged scene and yeast 0.60-0.69x and medical 0.37x.
_MLP_S = 0.12        # seconds of one regression dte_mlp fit (5-fold inner CV) per n^0.67
_MLP_ROWS_EXP = 0.67
_MLP_INPUTS = 500    # inputs that double it
_MLP_OUTPUTS = 100   # outputs that double it
_MLP_MULTILABEL = 1.6


def mlp_cost(n, p, d, params, *, sparse=False, density=None, task=None):
    fits = 4 * _int(params, "cv", 5) + 1
    seconds = _MLP_S * max(2, n) ** _MLP_ROWS_EXP * (1.0 + p / _MLP_INPUTS + d / _MLP_OUTPUTS) * fits / 21
    if task == "multilabel":
        seconds *= _MLP_MULTILABEL
    return Cost(seconds, 8.0 * (p * 100 + 100 * 100 + 100 * d) / 2**20)


# ML-kNN (scikit-multilearn-ng) counts its neighbours' labels in Python, one row and one label at a time, on sparse
# matrices: per fit about 70 us per row (training and predicted) plus 13.5 us per row and label, beside the
# neighbour search (n^2 p distances). Against the archived rows (tests/data/dte_multilabel_competitors_measured_cpu
# .json: flags, emotions, birds, cal500) this charges 0.99-1.14x of their CPU time; one inner fit each of scene,
# yeast, medical, enron and genbase, timed apart (0.8 n rows fitted, 0.2 n predicted) beside two other jobs, is
# charged 0.59-0.91x of its time.
# The model before (neighbour search only) charged cal500 (174 labels) 0.12x.
_MLKNN_FIT_S = 5e-3
_MLKNN_ROW_S = 7e-5
_MLKNN_ROW_LABEL_S = 1.35e-5
_MLKNN_SEARCH_S = 1e-10


def mlknn_cost(n, p, d, params, *, sparse=False, density=None):
    """The 3 x 3 grid by inner CV and the refit: per fit, the label counting over every row and label and the
    neighbour search; one second of start-up."""
    fits = len(params.get("k_values", (3, 5, 7))) * len(params.get("s_values", (0.5, 0.7, 1.0))) \
        * _int(params, "cv", 5) + 1
    n = max(2, n)
    per_fit = _MLKNN_FIT_S + n * (_MLKNN_ROW_S + _MLKNN_ROW_LABEL_S * d) + _MLKNN_SEARCH_S * n * n * p
    return Cost(fits * per_fit + 1.0, 8.0 * n * (p + d) / 2**20)


def rakel_cost(n, p, d, params, *, sparse=False, density=None):
    """``model_count`` label-powerset linear SVMs. Their cost is the SVMs' iterations, which the inputs' scale
    decides and the registry does not say: LinearSVC models on three of a dataset's labels, timed apart, took 10
    iterations on yeast, 20-60 on scene, emotions and cal500, 70-150 on medical, and ran to the cap of 1000 on birds
    and genbase. This charge fits the converging ones (the archived rows: emotions 1.3x, cal500 0.5x, flags 3.2x)
    and charges birds 0.06x of its 56 s per fold."""
    models = _int(params, "model_count", 2 * d)
    return Cost(models * 8 * 5e-8 * n * p + 1.0, models * 8 * 8.0 * p / 2**20)


# the cascade's task (layer score, target standardisation) comes from the dataset, not from the values of y
_DTE_TASKS = {"regression": {"task": "regression"}, "multioutput_regression": {"task": "regression"},
              "multilabel": {"task": "multilabel"}}
register("deep_tree_ensemble", "forestbench.deep:DeepTreeEnsemble", cost=dte_cost, task_params=_DTE_TASKS,
         description="deep tree-ensemble: RF+ET layers with tree-embedding and/or output-space features, pruned "
                     "to the best training layer (DTE paper; variant X_TE, TE, X_OS, X_OS_TE)")
register("dte_rf_et", "forestbench.peers:RandomForestExtraTrees", cost=rf_et_cost,
         description="one RF + one ET of the forestbench kernel, averaged (DTE paper's RF+ET baseline)")
register("dte_mldf", "forestbench.peers:MultiLabelDeepForest", cost=mldf_cost,
         description="MLDF multi-label deep forest on forestbench forests (DTE paper's main competitor)")
register("dte_erc", "forestbench.peers:EnsembleOfRegressorChains", cost=chains_cost,
         description="ensemble of 10 random-order regressor chains of regression trees (scikit-learn)")
register("dte_ecc", "forestbench.peers:EnsembleOfClassifierChains", cost=ecc_cost,
         description="ensemble of 10 random-order classifier chains of decision trees (scikit-learn)")
register("dte_mlp", "forestbench.peers:TunedMLP", cost=mlp_cost, task_params=_DTE_TASKS,
         description="scikit-learn MLP tuned by inner 5-fold CV over {50, 100} neurons x {1, 2} layers")
_SKMULTILEARN = peers_extra("skmultilearn", "scikit-multilearn-ng")
register("dte_mlknn", "forestbench.peers:TunedMLkNN", cost=mlknn_cost, requires=_SKMULTILEARN,
         description="ML-kNN (scikit-multilearn-ng), k and smoothing by inner 5-fold CV")
register("dte_rakel", "forestbench.peers:RakelOverlapping", cost=rakel_cost, requires=_SKMULTILEARN,
         description="RAkEL-o with linear SVMs on overlapping label subsets of size 3 (scikit-multilearn-ng)")
