"""scikit-learn's estimators: the correctness oracle and the speed baseline.

Cost hooks (``forestbench.workflow.resources.Cost``: single-thread seconds of fit + predict, model MB). The constants
were measured with scikit-learn 1.x on random sparse inputs (2000 and 4000 rows, 20 000 features, 100 stored values per
row, 20 classes; one thread, on a shared 2-core machine):

- one-vs-rest linear models (SGD, liblinear's LinearSVC, RidgeClassifier's sparse solver) took 0.6e-7 to 1.6e-7 s
  per (stored value x class) for a whole fit, the logistic loss with an elastic-net penalty 4.4e-7 (8-15 epochs or
  liblinear iterations). ``C_LINEAR`` triples the typical value, since real text converges in more passes than
  random data. Against thesis Table 8.5 (20 newsgroups, a 2014 machine, each time a 5-fold grid search plus the
  refit), per fit: SGD 236 s, linear SVC 49 s, ridge 185 s; these hooks charge SGD 57 to 230 s by loss and
  penalty, linear SVC 57 s and ridge 230 s (``RIDGE_FACTOR``: small penalties make its conjugate-gradient solver
  iterate longer than random data shows) on the registry's shape of 20 newsgroups (all 18 846 rows, 500 stored
  values per row assumed, 20 classes), within the 3x time margin of the thesis's times.
- brute-force k-NN: 4.6e-10 to 6e-10 s per (training row x predicted row x stored value);
- naive Bayes: 1e-8 to 2e-8 s per (stored value x class), fit and predict.

A single-label classifier's registry shape has d = 1 (one label column) and no class count: the hooks charge
``ASSUMED_CLASSES`` classes (20 newsgroups' 20, the most of any single-label dataset in the registry), an upper
bound for binary tasks.
"""
from forestbench.workflow.methods import register
from forestbench.workflow.resources import Cost, forest_cost, stored_per_row

#: seconds per (stored input value x class) of one linear one-vs-rest fit (see the module docstring)
C_LINEAR = 3.0e-7
#: the logistic loss and the l1 / elastic-net penalties need more SGD epochs than the hinge loss with l2
SGD_FACTOR = {"log_loss": 2.0, "modified_huber": 1.5, "elasticnet": 2.0, "l1": 1.5}
#: ridge's sparse solver against the other linear models (thesis Table 8.5: 185 s per fit against 49 s for
#: liblinear)
RIDGE_FACTOR = 4.0
#: seconds per (training row x predicted row x stored value) of brute-force k-NN distances
C_KNN = 6.0e-10
#: seconds per (stored value x class) of a naive Bayes fit and predict
C_NB = 2.0e-8
#: classes charged to a single-label classifier (its registry shape gives none)
ASSUMED_CLASSES = 20
#: scikit-learn's working memory for chunked pairwise distances (``sklearn.set_config(working_memory=...)``), MB
KNN_WORKING_MB = 1024.0


def _classes(d):
    return max(int(d), ASSUMED_CLASSES) if d == 1 else int(d)


def _stored(n, p, sparse, density):
    return n * stored_per_row(p, sparse, density)


def single_tree_cost(n, p, d, params, *, sparse=False, density=None):
    """One tree (decision trees, extra trees): the forest model with one tree, whatever ``n_estimators`` says."""
    return forest_cost(n, p, d, {**(params or {}), "n_estimators": 1}, sparse=sparse, density=density)


def bagging_cost(n, p, d, params, *, sparse=False, density=None):
    """scikit-learn's bagging: ``n_estimators`` (default 10) fully grown trees on every feature."""
    params = dict(params or {})
    params.setdefault("n_estimators", 10)
    return forest_cost(n, p, d, params, sparse=sparse, density=density)


def adaboost_cost(n, p, d, params, *, sparse=False, density=None):
    """AdaBoost over trees: ``n_estimators`` (default 50) trees of ``max_depth`` (default 1: stumps), each on
    ``max_features`` (default every feature)."""
    params = dict(params or {})
    params.setdefault("n_estimators", 50)
    params.setdefault("max_depth", 1)
    params.setdefault("max_features", None)
    return forest_cost(n, p, _classes(d), params, sparse=sparse, density=density)


def gbrt_cost(n, p, d, params, *, sparse=False, density=None):
    """scikit-learn's single-output gradient boosting: ``n_estimators`` (100) trees of depth ``max_depth`` (3)."""
    from forestbench.workflow.methods.boosting import st_boosting_cost

    params = dict(params or {})
    depth = params.get("max_depth", 3)
    if params.get("max_leaf_nodes") is None and isinstance(depth, int) and not isinstance(depth, bool):
        params["max_leaf_nodes"] = 2 ** max(1, depth)
    return st_boosting_cost(n, p, 1, params, sparse=sparse, density=density)


def linear_cost(n, p, d, params, *, sparse=False, density=None, factor=1.0):
    """A one-vs-rest linear model: ``C_LINEAR`` x stored values x classes (x ``factor``); the model holds a
    coefficient per (feature, class)."""
    k = _classes(d)
    return Cost(factor * C_LINEAR * _stored(n, p, sparse, density) * k + 0.1, 8.0 * p * k / 2**20)


def sgd_cost(n, p, d, params, *, sparse=False, density=None):
    params = params or {}
    factor = SGD_FACTOR.get(params.get("loss", "hinge"), 1.0) * SGD_FACTOR.get(params.get("penalty", "l2"), 1.0)
    return linear_cost(n, p, d, params, sparse=sparse, density=density, factor=factor)


def ridge_cost(n, p, d, params, *, sparse=False, density=None):
    return linear_cost(n, p, d, params, sparse=sparse, density=density, factor=RIDGE_FACTOR)


def lasso_cost(n, p, d, params, *, sparse=False, density=None):
    """One coordinate-descent Lasso per output (no class count: a regressor)."""
    return Cost(C_LINEAR * _stored(n, p, sparse, density) * max(1, int(d)) + 0.1, 8.0 * p * d / 2**20)


def knn_cost(n, p, d, params, *, sparse=False, density=None):
    """Brute-force k-NN: fitting stores the rows; predicting computes the distances of every predicted row to
    every training row. The predicted rows are charged as half the training rows (a test part or a validation
    fold is smaller than the training part). The model is a copy of the training inputs, plus scikit-learn's
    working memory for the distance chunks."""
    width = stored_per_row(p, sparse, density)
    seconds = C_KNN * n * (n / 2.0) * width + 0.1
    return Cost(seconds, 12.0 * n * width / 2**20 + KNN_WORKING_MB)


def naive_bayes_cost(n, p, d, params, *, sparse=False, density=None):
    k = _classes(d)
    return Cost(C_NB * _stored(n, p, sparse, density) * k + 0.1, 2 * 8.0 * p * k / 2**20)


register("sklearn_random_forest", "sklearn.ensemble:RandomForestRegressor", cost=forest_cost,
         description="scikit-learn RandomForestRegressor (multi-output, dense Y)")
register("sklearn_extra_trees", "sklearn.ensemble:ExtraTreesRegressor", cost=forest_cost,
         description="scikit-learn ExtraTreesRegressor (multi-output, dense Y)")
register("sklearn_decision_tree", "sklearn.tree:DecisionTreeRegressor", cost=single_tree_cost,
         description="scikit-learn DecisionTreeRegressor (multi-output, dense Y)")
register("sklearn_lasso", "sklearn.linear_model:Lasso", cost=lasso_cost, description="scikit-learn Lasso")
register("sklearn_bagging", "sklearn.ensemble:BaggingRegressor", cost=bagging_cost,
         description="scikit-learn BaggingRegressor")
register("sklearn_gbrt", "sklearn.ensemble:GradientBoostingRegressor", cost=gbrt_cost,
         description="scikit-learn GradientBoostingRegressor (single output; staged predictions)")


def _classifier_forest_cost(n, p, d, params, *, sparse=False, density=None):
    return forest_cost(n, p, _classes(d), params, sparse=sparse, density=density)


def _classifier_tree_cost(n, p, d, params, *, sparse=False, density=None):
    return single_tree_cost(n, p, _classes(d), params, sparse=sparse, density=density)


# single-label classifiers: predict gives one score column per class (probabilities, else a one-hot vote)
for _name, _path, _cost in (
    ("sklearn_random_forest_classifier", "sklearn.ensemble:RandomForestClassifier", _classifier_forest_cost),
    ("sklearn_extra_trees_classifier", "sklearn.ensemble:ExtraTreesClassifier", _classifier_forest_cost),
    ("sklearn_decision_tree_classifier", "sklearn.tree:DecisionTreeClassifier", _classifier_tree_cost),
    ("sklearn_adaboost", "forestbench.peers:TreeAdaBoostClassifier", adaboost_cost),
    ("sklearn_knn", "sklearn.neighbors:KNeighborsClassifier", knn_cost),
    ("sklearn_bernoulli_nb", "sklearn.naive_bayes:BernoulliNB", naive_bayes_cost),
    ("sklearn_multinomial_nb", "sklearn.naive_bayes:MultinomialNB", naive_bayes_cost),
    ("sklearn_sgd", "sklearn.linear_model:SGDClassifier", sgd_cost),
    ("sklearn_linear_svc", "sklearn.svm:LinearSVC", linear_cost),
    ("sklearn_ridge_classifier", "sklearn.linear_model:RidgeClassifier", ridge_cost),
):
    register(_name, _path, classifier=True, cost=_cost,
             description=f"scikit-learn {_path.rsplit(':', 1)[1]} (class scores)")
