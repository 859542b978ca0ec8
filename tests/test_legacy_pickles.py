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

FILE = Path(__file__).resolve().parent / "data" / "pre_layout_estimators.pkl"


def test_the_fixture_names_old_module_paths():
    blob = FILE.read_bytes()
    assert b"sklearn_lvgp._sgpr" in blob and b"sklearn_lvgp._svgp._layer" in blob


@pytest.fixture(scope="module")
def loaded():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same version string: no InconsistentVersionWarning
        return pickle.loads(FILE.read_bytes())


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
