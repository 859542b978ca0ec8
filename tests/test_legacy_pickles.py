"""Estimators pickled before the package's layout by concept still load and predict.

``tests/data/pre_layout_estimators.pkl`` holds the six estimators fitted and pickled by the
package as it was before its modules moved into layers (commit 47aa8ee), each with the
predictions that version made; their pickles name the old module paths
(``sklearn_lvgp._sgpr``, ``sklearn_lvgp._svgp._layer``, ``sklearn_lvgp.kernels._combination``, ...).
"""

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_lvgp._core.warn import InconsistentVersionWarning

FILE = Path(__file__).resolve().parent / "data" / "pre_layout_estimators.pkl"


def test_the_fixture_names_old_module_paths():
    blob = FILE.read_bytes()
    assert b"sklearn_lvgp._sgpr" in blob and b"sklearn_lvgp._svgp._layer" in blob


@pytest.fixture(scope="module")
def loaded():
    import sklearn_lvgp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        blob = pickle.loads(FILE.read_bytes())
    # they were written by version 0.1.0.dev0 (before versions came from git): each estimator
    # says so once, and nothing else warns
    assert all(isinstance(w.message, InconsistentVersionWarning) for w in caught), caught
    if sklearn_lvgp.__version__ != "0.1.0.dev0":
        assert len(caught) == 6
        assert all(w.message.original_version == "0.1.0.dev0" for w in caught)
    return blob


@pytest.mark.parametrize("name", ["SparseGPRegressor", "DeepGP", "GPCDE", "DVMGP",
                                  "UnscentedGPLVM", "LDGD"])
def test_pre_layout_pickle_loads_and_predicts_as_before(loaded, name):
    import sklearn_lvgp

    est, expected = loaded[name]
    assert type(est) is getattr(sklearn_lvgp, name)
    r = np.random.default_rng(0)
    X = r.uniform(-2, 2, (30, 2))
    r.standard_normal(30)  # the targets' noise, drawn between X and Xl when they were made
    Xl = r.standard_normal((30, 4))
    if name == "UnscentedGPLVM":
        got = est.score_samples(Xl[:5])
    elif name == "LDGD":
        got = est.predict_proba(Xl[:5])
    else:
        got = est.predict(X[:5])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
