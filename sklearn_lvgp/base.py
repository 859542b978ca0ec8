"""Shared estimator scaffolding: the ``fit`` template method of every sklearn_lvgp model."""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from ._parallel import threads
from ._validation import check_int

__all__ = ["_BaseLVGP"]


class _BaseLVGP(BaseEstimator):
    """Template: validate the data and parameters, seed, enter the thread context, call ``_fit``.

    Subclasses implement ``_check_params(X, y)`` (hand-written parameter checks, raising
    ``ValueError``/``TypeError``) and ``_fit(X, y, random_state)``. They never reassign a
    constructor parameter.
    """

    def _validate_fit_data(self, X, y):
        """Validated float64 ``X`` (and ``y``); unsupervised here, supervised models override."""
        return validate_data(self, X, dtype=np.float64), None

    def fit(self, X, y=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; never modified.
        y : array-like or None
            Targets for supervised models; ignored by transformers.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_fit_data(X, y)
        self._check_params(X, y)
        check_int("verbose", self.verbose, min_value=0)
        random_state = check_random_state(self.random_state)
        with threads(self.n_jobs):
            self._fit(X, y, random_state)
        return self

    def _check_params(self, X, y):
        raise NotImplementedError

    def _fit(self, X, y, random_state):
        raise NotImplementedError
