"""Mapping latent points of a fitted GPLVM to data space (shared by its optimisers)."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._core.parallel import threads
from .._core.validation import check_finite_array

__all__ = ["LatentMapMixin"]


class LatentMapMixin:
    """``predict_uncertain`` and ``inverse_transform`` of a fitted GPLVM: the estimator
    provides ``_predictive()``, ``noise_variance_``, ``X_mean_``, ``X_scale_``,
    ``n_components`` and ``n_jobs``."""

    def _check_latent(self, name, A, n=None):
        A = check_finite_array(name, A)
        if A.ndim != 2 or A.shape[1] != self.n_components or (n is not None and A.shape[0] != n):
            expected = f"({'n' if n is None else n}, {self.n_components})"
            raise ValueError(f"{name} must have shape {expected}, got {A.shape}.")
        return A

    def predict_uncertain(self, mean, var, full_cov=False, include_noise=True):
        """Compute the moments of the data-space predictive at Gaussian latent inputs.

        The exact mean and variance of the non-Gaussian predictive (Girard et al. 2003).

        Parameters
        ----------
        mean : array-like of shape (n, n_components)
            Means of the latent inputs.
        var : array-like of shape (n, n_components)
            Variances of the latent inputs (``>= 0``).
        full_cov : bool, default=False
            Return the (n, D, D) covariance across outputs.
        include_noise : bool, default=True
            Add the Gaussian noise variance to the diagonal.

        Returns
        -------
        mean : ndarray of shape (n, n_features)
            Predictive mean.
        var : ndarray of shape (n, n_features) or (n, n_features, n_features)
            Predictive variance (or covariance).
        """
        check_is_fitted(self)
        mean = self._check_latent("mean", mean)
        var = self._check_latent("var", var, mean.shape[0])
        if np.any(var < 0):
            raise ValueError("var must be non-negative.")
        with threads(self.n_jobs):
            m, v = self._predictive().moments(mean, var, full_cov,
                                              self.noise_variance_ if include_noise else None)
        scale = np.outer(self.X_scale_, self.X_scale_) if full_cov else self.X_scale_ ** 2
        return m * self.X_scale_ + self.X_mean_, v * scale

    def inverse_transform(self, X, return_std=False, latent_var=None, include_noise=True):
        """Map latent points to data space (predictive mean).

        Parameters
        ----------
        X : array-like of shape (n, n_components)
            Latent points.
        return_std : bool, default=False
            Also return per-output predictive standard deviations.
        latent_var : array-like of shape (n, n_components), default=None
            Latent variances; when given the uncertain-input moments (Girard et al. 2003) are used.
        include_noise : bool, default=True
            Include the noise variance in the standard deviation.

        Returns
        -------
        Y : ndarray of shape (n, n_features)
            Predictive mean.
        std : ndarray of shape (n, n_features)
            Predictive standard deviation (only if ``return_std``).
        """
        check_is_fitted(self)
        X = self._check_latent("X", X)
        if latent_var is not None:
            m, v = self.predict_uncertain(X, latent_var, include_noise=include_noise)
            return (m, np.sqrt(v)) if return_std else m
        with threads(self.n_jobs):
            m, v = self._predictive().moments(
                X, noise_variance=self.noise_variance_ if include_noise else None)
        m = m * self.X_scale_ + self.X_mean_
        return (m, np.sqrt(v) * self.X_scale_) if return_std else m
