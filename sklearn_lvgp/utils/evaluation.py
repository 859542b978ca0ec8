"""The dimensionality-reduction protocol of the Unscented GPLVM paper.

De Souza et al. (2021, §4.1): five-fold cross-validated 1-nearest-neighbour accuracy of the latent
embedding, with the two most relevant latent dimensions plotted.
"""

import numpy as np
from sklearn.model_selection import KFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier

__all__ = ["knn_accuracy", "most_relevant"]


def knn_accuracy(Z, y, n_splits=5, random_state=42):
    """Per-fold 1-nearest-neighbour accuracy of an embedding.

    ``KFold(n_splits, shuffle=True, random_state)`` over the rows; in each fold a Euclidean 1-NN
    classifier is fitted on the training rows of ``Z`` and scored on the held-out rows.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_dims)
        Embedding (e.g. latent means).
    y : array-like of shape (n_samples,)
        Class labels.
    n_splits : int, default=5
        Number of folds.
    random_state : int, default=42
        Seed of the fold shuffle.

    Returns
    -------
    scores : ndarray of shape (n_splits,)
        Accuracy in each fold (report ``100 * mean`` and ``100 * std(ddof=1)``).
    """
    cv = KFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    return cross_val_score(KNeighborsClassifier(n_neighbors=1), Z, y, cv=cv)


def most_relevant(model, n_dims=2):
    """Latent means of the ``n_dims`` most relevant dimensions of a fitted GPLVM.

    Parameters
    ----------
    model : UnscentedGPLVM
        A fitted model (uses ``relevance_`` and ``latent_mean_``).
    n_dims : int, default=2
        Number of dimensions kept.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_dims)
        The selected latent means, most relevant first.
    """
    order = np.argsort(-np.asarray(model.relevance_), kind="stable")[:n_dims]
    return model.latent_mean_[:, order]
