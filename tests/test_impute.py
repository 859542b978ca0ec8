"""GPLVMImputer: scikit-learn's imputer conventions, and imputation quality on oil flow."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from sklearn_lvgp import GPLVMImputer, UnscentedGPLVM
from sklearn_lvgp.datasets import fetch_oil_flow

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

GPLVM = UnscentedGPLVM(n_inducing=8, max_iter=80, transform_max_iter=30, random_state=0)


def _data(n=40, D=5, seed=0, missing=0.2):
    r = np.random.default_rng(seed)
    t = r.uniform(-2, 2, n)
    W = r.standard_normal((2, D))
    X = np.tanh(np.column_stack([t, np.sin(2 * t)]) @ W) + 0.05 * r.standard_normal((n, D))
    mask = r.random(X.shape) < missing
    mask[0] = False
    Xm = np.where(mask, np.nan, X)
    return X, Xm, mask


def test_observed_entries_unchanged_and_missing_ones_filled():
    X, Xm, mask = _data()
    imp = GPLVMImputer(GPLVM).fit(Xm)
    out = imp.transform(Xm)
    np.testing.assert_array_equal(out[~mask], X[~mask])
    assert np.all(np.isfinite(out))
    std = imp.transform_std(Xm)
    assert np.all(std[~mask] == 0) and np.all(std[mask] > 0)
    new = imp.transform(Xm[:7] * 1.01)  # new rows: q(x) inferred from their observed entries
    assert np.all(np.isfinite(new))
    np.testing.assert_array_equal(imp.fit_transform(Xm), out)


def test_missing_values_placeholder_other_than_nan():
    _, Xm, mask = _data()
    coded = np.where(mask, -999.0, Xm)
    out_nan = GPLVMImputer(GPLVM).fit_transform(Xm)
    out_coded = GPLVMImputer(GPLVM, missing_values=-999.0).fit_transform(coded)
    np.testing.assert_allclose(out_coded, out_nan, rtol=1e-10)
    with pytest.raises(ValueError, match="NaN"):  # NaN is not the placeholder: refused
        GPLVMImputer(GPLVM, missing_values=-999.0).fit(Xm)


def test_indicator_empty_features_and_feature_names():
    _, Xm, mask = _data()
    Xm[:, 3] = np.nan  # missing everywhere
    imp = GPLVMImputer(GPLVM, add_indicator=True).fit(Xm)
    out = imp.transform(Xm)
    features = np.flatnonzero(mask.any(axis=0) | (np.arange(5) == 3))
    assert out.shape == (40, 4 + features.size)
    names = imp.get_feature_names_out()
    assert list(names[:4]) == ["x0", "x1", "x2", "x4"]
    assert list(names[4:]) == [f"missingindicator_x{i}" for i in features]
    kept = GPLVMImputer(GPLVM, keep_empty_features=True).fit(Xm)
    out = kept.transform(Xm)
    assert out.shape == (40, 5) and np.all(out[:, 3] == 0)
    assert kept.transform_std(Xm).shape == (40, 5)


def test_set_output_and_pipeline():
    pd = pytest.importorskip("pandas")
    _, Xm, _ = _data(n=60)
    frame = pd.DataFrame(Xm, columns=list("abcde"))
    out = GPLVMImputer(GPLVM).set_output(transform="pandas").fit_transform(frame)
    assert list(out.columns) == list("abcde") and not out.isna().any().any()
    y = (np.nan_to_num(Xm[:, 0]) > 0).astype(int)
    pipe = make_pipeline(GPLVMImputer(GPLVM), LogisticRegression()).fit(Xm, y)
    assert pipe.score(Xm, y) > 0.5


def test_bad_input_is_refused_by_name():
    _, Xm, _ = _data()
    bad = Xm.copy()
    bad[2, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        GPLVMImputer(GPLVM).fit(bad)
    with pytest.raises(ValueError, match="every feature"):
        GPLVMImputer(GPLVM).fit(np.full((5, 3), np.nan))
    with pytest.raises(TypeError, match="estimator must be an UnscentedGPLVM"):
        GPLVMImputer(SimpleImputer()).fit(Xm)


def test_mcar_imputation_on_oil_flow(shared_data):
    """30 % of the oil-flow entries missing completely at random: the GPLVM's imputations
    beat the column means by far, and its 90 % predictive intervals cover about 90 %."""
    X, _ = fetch_oil_flow(subset="gplvm100", data_home=shared_data, download_if_missing=False,
                          return_X_y=True)
    r = np.random.default_rng(0)
    mask = r.random(X.shape) < 0.3
    Xm = np.where(mask, np.nan, X)
    imp = GPLVMImputer(UnscentedGPLVM(n_components=3, n_inducing=20, max_iter=300,
                                      random_state=0))
    out = imp.fit_transform(Xm)
    rmse = np.sqrt(np.mean((out[mask] - X[mask]) ** 2))
    mean = SimpleImputer().fit_transform(Xm)
    rmse_mean = np.sqrt(np.mean((mean[mask] - X[mask]) ** 2))
    assert rmse < 0.7 * rmse_mean
    std = imp.transform_std(Xm)[mask]
    covered = np.mean(np.abs(out[mask] - X[mask]) <= 1.645 * std)
    assert 0.75 <= covered <= 0.99


def test_dask_input_with_nan_is_taken_in_memory():
    """A dask array with NaN is materialised by the imputer's validation (documented): the
    same imputation as its NumPy copy."""
    da = pytest.importorskip("dask.array")
    _, Xm, _ = _data()
    got = GPLVMImputer(GPLVM).fit_transform(da.from_array(Xm, chunks=(10, 5)))
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, GPLVMImputer(GPLVM).fit_transform(Xm))


def test_inf_mixed_with_nan_and_empty_column_with_placeholder():
    """inf is never a missing value (refused by name, also with a placeholder other than NaN);
    a column missing everywhere under a non-NaN placeholder is dropped like a NaN one."""
    _, Xm, mask = _data()
    coded = np.where(mask, -1.0, Xm)
    coded[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        GPLVMImputer(GPLVM, missing_values=-1.0).fit(coded)
    coded[3, 1] = 0.5
    coded[:, 2] = -1.0
    out = GPLVMImputer(GPLVM, missing_values=-1.0).fit_transform(coded)
    assert out.shape == (40, 4) and np.all(np.isfinite(out))


def test_default_model_is_seeded_by_random_state():
    """The default model takes the imputer's random_state (same seed, same imputation); a
    given estimator keeps its own."""
    _, Xm, _ = _data(n=30, D=4)
    a = GPLVMImputer(random_state=0).fit(Xm)
    b = GPLVMImputer(random_state=0).fit(Xm)
    np.testing.assert_array_equal(a.transform(Xm), b.transform(Xm))
    assert a.estimator_.random_state == 0
    assert GPLVMImputer(GPLVM, random_state=5).fit(Xm).estimator_.random_state == 0


def test_clone_keeps_the_estimator_unfitted():
    imp = GPLVMImputer(GPLVM).fit(_data()[1])
    assert not hasattr(clone(imp).estimator, "latent_mean_")
    assert not hasattr(GPLVM, "latent_mean_")


@pytest.mark.slow
def test_oil_flow_latent_space_with_30_percent_missing(shared_data):
    """The 1000-row oil flow split with 30 % of its entries missing: the flow regimes stay
    separated in the 2-D latent space (10-fold 1-NN accuracy), and the imputer beats the
    BayesianRidge iterative imputer (a few minutes)."""
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    X, y = fetch_oil_flow(subset="train", data_home=shared_data, download_if_missing=False,
                          return_X_y=True)
    mask = np.random.default_rng(0).random(X.shape) < 0.3
    Xm = np.where(mask, np.nan, X)
    Z = UnscentedGPLVM(n_components=2, n_inducing=30, random_state=0).fit_transform(Xm)
    cv = StratifiedKFold(10, shuffle=True, random_state=0)
    assert np.mean(cross_val_score(KNeighborsClassifier(1), Z, y, cv=cv)) >= 0.9
    out = GPLVMImputer(UnscentedGPLVM(n_components=5, normalize_X="standardize",
                                      random_state=0)).fit_transform(Xm)
    ours = np.sqrt(np.mean(((out - X) / X.std(axis=0))[mask] ** 2))
    theirs = IterativeImputer(random_state=0).fit_transform(Xm)
    assert ours < np.sqrt(np.mean(((theirs - X) / X.std(axis=0))[mask] ** 2))
