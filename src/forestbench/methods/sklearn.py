"""scikit-learn's estimators: the correctness oracle and the speed baseline."""
from forestbench.methods import register

register("sklearn_random_forest", "sklearn.ensemble:RandomForestRegressor",
         description="scikit-learn RandomForestRegressor (multi-output, dense Y)")
register("sklearn_extra_trees", "sklearn.ensemble:ExtraTreesRegressor",
         description="scikit-learn ExtraTreesRegressor (multi-output, dense Y)")
register("sklearn_decision_tree", "sklearn.tree:DecisionTreeRegressor",
         description="scikit-learn DecisionTreeRegressor (multi-output, dense Y)")
register("sklearn_lasso", "sklearn.linear_model:Lasso", description="scikit-learn Lasso")
register("sklearn_bagging", "sklearn.ensemble:BaggingRegressor", description="scikit-learn BaggingRegressor")
register("sklearn_gbrt", "sklearn.ensemble:GradientBoostingRegressor",
         description="scikit-learn GradientBoostingRegressor (single output; staged predictions)")

# single-label classifiers: predict gives one score column per class (probabilities, else a one-hot vote)
for _name, _path in {
    "sklearn_random_forest_classifier": "sklearn.ensemble:RandomForestClassifier",
    "sklearn_extra_trees_classifier": "sklearn.ensemble:ExtraTreesClassifier",
    "sklearn_decision_tree_classifier": "sklearn.tree:DecisionTreeClassifier",
    "sklearn_adaboost": "forestbench.sklearn_extras:TreeAdaBoostClassifier",
    "sklearn_knn": "sklearn.neighbors:KNeighborsClassifier",
    "sklearn_bernoulli_nb": "sklearn.naive_bayes:BernoulliNB",
    "sklearn_multinomial_nb": "sklearn.naive_bayes:MultinomialNB",
    "sklearn_sgd": "sklearn.linear_model:SGDClassifier",
    "sklearn_linear_svc": "sklearn.svm:LinearSVC",
    "sklearn_ridge_classifier": "sklearn.linear_model:RidgeClassifier",
}.items():
    register(_name, _path, classifier=True,
             description=f"scikit-learn {_path.rsplit(':', 1)[1]} (class scores)")
