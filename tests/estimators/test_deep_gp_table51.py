"""Salimbeni (2020), Table 5.1, GP column (c1) (slow; needs shared data).

Single-layer GP with the ch. 5 settings (§5.3.2 and the authors' public IWVI code) under the reduced
optimisation budget of ``examples/plot_deep_gp_table51.py`` (full batch, NGD γ = 1 on q(u), Adam
0.01, 3000 steps), inputs and targets z-scored with full-data statistics, test log-likelihood by the
KDE protocol (2000 samples, Silverman bandwidth).

Split: ``bayesian_benchmarks`` split 0 (``np.random.RandomState(0)`` shuffle of the rows, first
``int(0.9 N)`` for training), applied to the ``uci_hl`` rows, which are in the UCI order. The
IWVI script (``DGPs_with_IWVI`` ``run_conditional_density_estimation.py``) loads the data without
the ``split`` argument, so its five "splits" are five runs on split 0 — which is why Table 5.1
reports standard errors of 0.00; on the Hernández-Lobato & Adams splits the split-to-split
spread of the KDE estimate is much larger (boston split 4: −3.9, one outlier), see the example.
Asserted: that one split within ±0.1 of the thesis value.
"""


import numpy as np
import pytest

from sklearn_lvgp import DeepGP
from sklearn_lvgp.datasets import fetch_uci
from sklearn_lvgp.kernels import RBF

#: Table 5.1 column 1 (standardised units).
THESIS_C1 = {"boston": 0.02, "energy": 1.71}


def _load(shared_data, name):
    d = fetch_uci(name, data_home=shared_data, download_if_missing=False)
    X, y, tests = d.data, d.target, d.test_masks
    data = np.column_stack([X, y])
    z = (data - data.mean(axis=0)) / (data.std(axis=0) + 1e-6)  # bayesian_benchmarks
    return z[:, :-1], z[:, -1], tests


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(THESIS_C1))
def test_table51_gp_column(shared_data_with, name):
    shared_data = shared_data_with(f"uci_hl/{name}.csv.gz")
    X, y, _ = _load(shared_data, name)
    D = X.shape[1]
    n = X.shape[0]
    ind = np.arange(n)
    np.random.RandomState(0).shuffle(ind)
    te = np.zeros(n, dtype=bool)
    te[ind[int(0.9 * n):]] = True
    model = DeepGP(tol=None, n_layers=1, n_inducing=128,
                   kernel=RBF(length_scale=np.full(D, np.sqrt(D)), variance=1.0),
                   noise_variance_init=0.01, learning_rate=0.01,
                   learning_rate_schedule="staircase", natgrad_gamma=1.0, batch_size=None,
                   max_iter=3000, normalize_y=False, random_state=0)
    model.fit(X[~te], y[~te])
    kde = model.predict_log_density(X[te], y[te], method="kde", n_kde_samples=2000, random_state=0)
    assert abs(kde.mean() - THESIS_C1[name]) <= 0.1, kde.mean()
