"""Natural gradients for non-conjugate likelihoods: NGD+Adam against Adam alone (Salimbeni 2020,
§3.4.2, Figs. 3.3-3.4, on documented subsets; ``benchmarks/repro_natgrad_uci.py``).

Setting of every fit: SVGP (``n_layers=1``) with the estimator defaults (100 inducing inputs, Adam
0.03, batch 10000 = the full batch, so ``elbo_history_`` is the exact bound) except
``max_iter``, ``tol=None``, ``random_state=split``, the likelihood and, for NGD+Adam,
``natgrad_gamma=(1e-4, 0.1, 40)``.

The full subsets (5 splits, 500 steps) are ``slow``; the default suite runs 2 splits for 40
(energy) and 50 (breast cancer) steps, where the recorded runs
(``examples/output/repro_natgrad_a.md``) already have NGD+Adam ahead on every split, and stay
so to step 500: energy from step 27 on (by 105-119 nats at step 40), breast cancer from step 42 on
(by 11.8-12.5 nats at step 50). Boston (Student-t) is not tested for the ordering: at step 500
NGD+Adam is ahead on 3 of 5 splits only, within 3 nats (reported as not reproduced). Neither
are the test log-likelihoods of Figs. 3.5-3.6 (naval, kin8nm, power): NGD+Adam was not ahead on
every split there (``examples/output/repro_natgrad_d.md``, ``repro_natgrad_e.md``).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from sklearn_lvgp import DeepGP, DeepGPClassifier
from sklearn_lvgp.datasets import uci_hl_splits

GAMMA = (1e-4, 0.1, 40)


def _bounds(estimator, X, y, steps, seed):
    """The bound after ``steps`` steps of Adam and of NGD+Adam, same start and seed."""
    out = []
    for gamma in (None, GAMMA):
        model = estimator(n_layers=1, max_iter=steps, tol=None, natgrad_gamma=gamma,
                          random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning: the fixed step budget
            model.fit(X, y)
        out.append(model.elbo_history_[-1])
    return out


def _energy(shared_data, n_splits):
    return [(s, Xtr, ytr) for s, Xtr, ytr, _, _ in
            uci_hl_splits("energy", 0, n_splits, data_home=shared_data,
                          download_if_missing=False)]


def _breast_cancer(n_splits):
    X, y = load_breast_cancer(return_X_y=True)
    return [(s, *train_test_split(X, y, test_size=0.1, random_state=s)[::2])
            for s in range(n_splits)]


def test_natgrad_ahead_of_adam_energy_reduced(shared_data_with):
    shared_data = shared_data_with("uci_hl/energy.csv.gz")
    for s, X, y in _energy(shared_data, 2):
        adam, ngd = _bounds(DeepGP, X, y, 40, s)
        assert ngd > adam, (s, ngd, adam)


def test_natgrad_ahead_of_adam_breast_cancer_reduced():
    for s, X, y in _breast_cancer(2):
        adam, ngd = _bounds(DeepGPClassifier, X, y, 50, s)
        assert ngd > adam, (s, ngd, adam)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["energy", "breast_cancer"])
def test_natgrad_ahead_of_adam_full_subset(shared_data_with, case):
    """≥ 4 of 5 splits with the higher bound after 500 steps (the issue's claim)."""
    if case == "energy":
        data, estimator = _energy(shared_data_with("uci_hl/energy.csv.gz"), 5), DeepGP
    else:
        data, estimator = _breast_cancer(5), DeepGPClassifier
    wins = [np.greater(*_bounds(estimator, X, y, 500, s)[::-1]) for s, X, y in data]
    assert sum(wins) >= 4, wins
