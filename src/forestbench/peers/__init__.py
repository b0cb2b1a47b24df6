"""The methods the papers compare ours with, apart from our own algorithms: wrappers of other boosting libraries
(XGBoost, LightGBM, CatBoost, scikit-learn's gradient boosting per output; imported when a model is fitted), the
multi-output competitors of the deep tree-ensemble paper (RF+ET, multi-label deep forest, chains, MLP, ML-kNN,
RAkEL), and small scikit-learn compositions the workflow tunes or scores by name."""
from forestbench.peers._boosting_libraries import (CatBoostMulti, LightGBMPerOutput, SklearnGBRTPerOutput,
                                                   XGBoostMultiOutputTree, XGBoostOneOutputPerTree)
from forestbench.peers._classifier_scores import ClassifierScores
from forestbench.peers._dte_competitors import (EnsembleOfClassifierChains, EnsembleOfRegressorChains,
                                                MultiLabelDeepForest, RakelOverlapping, RandomForestExtraTrees,
                                                TunedMLkNN, TunedMLP)
from forestbench.peers._sklearn_compositions import TreeAdaBoostClassifier

__all__ = ["XGBoostMultiOutputTree", "XGBoostOneOutputPerTree", "CatBoostMulti", "LightGBMPerOutput",
           "SklearnGBRTPerOutput", "RandomForestExtraTrees", "MultiLabelDeepForest", "EnsembleOfRegressorChains",
           "EnsembleOfClassifierChains", "TunedMLP", "TunedMLkNN", "RakelOverlapping", "TreeAdaBoostClassifier",
           "ClassifierScores"]
