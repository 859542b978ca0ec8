"""The two-cluster synthetic regression problem of the DVMGP experiments (de Souza 2020, §4.4.1)."""

import numpy as np
from sklearn.model_selection import KFold

__all__ = ["make_two_parabolas", "two_parabolas_split"]

_SEED = 19960111


def make_two_parabolas(n_per_cluster=250, random_state=_SEED):
    """Two Gaussian clusters whose targets are parabolas in different coordinates.

    Cluster 1: ``x ~ N((-1, 1), 0.4 I)``, ``y = x_1² + x_1``; cluster 2: ``x ~ N((2, 1), 0.4 I)``,
    ``y = x_2² + x_2`` (de Souza 2020, §4.4.1, with the typo in the second target corrected). No
    noise.

    Parameters
    ----------
    n_per_cluster : int, default=250
        Points per cluster.
    random_state : int, default=19960111
        Seed of ``numpy.random.default_rng`` (the paper's seed reproduces its data exactly).

    Returns
    -------
    X : ndarray of shape (2 * n_per_cluster, 2)
        Inputs, cluster 1 first.
    y : ndarray of shape (2 * n_per_cluster,)
        Targets.
    """
    rng = np.random.default_rng(random_state)
    X1 = rng.multivariate_normal([-1.0, 1.0], 0.4 * np.eye(2), size=n_per_cluster)
    X2 = rng.multivariate_normal([2.0, 1.0], 0.4 * np.eye(2), size=n_per_cluster)
    y = np.concatenate([X1[:, 0] ** 2 + X1[:, 0], X2[:, 1] ** 2 + X2[:, 1]])
    return np.vstack([X1, X2]), y


def two_parabolas_split(n_per_cluster=250, random_state=_SEED):
    """The paper's train/test split of :func:`make_two_parabolas` (raw, not standardised).

    ``KFold(2, shuffle=True, random_state)`` fold 0: the first half is the training set.

    Parameters
    ----------
    n_per_cluster : int, default=250
        Points per cluster.
    random_state : int, default=19960111
        Seed of the data and of the split.

    Returns
    -------
    X_train, X_test : ndarray of shape (n_per_cluster, 2)
        Training and test inputs (a shuffled half each).
    y_train, y_test : ndarray of shape (n_per_cluster,)
        Their targets.
    """
    X, y = make_two_parabolas(n_per_cluster, random_state)
    train, test = next(iter(KFold(2, shuffle=True, random_state=random_state).split(X)))
    return X[train], X[test], y[train], y[test]
