"""The likelihood contract: scikit-learn-style hyperparameters plus the variational expectation
``E_q[log p(y | f)]`` with its vector-Jacobian product, and the predictive quantities.

The hyperparameters work as the kernels' do (:class:`~sklearn_lvgp.kernels.Kernel`): attributes
named after the ``__init__`` arguments, each with a ``<name>_bounds`` companion (a ``(low, high)``
pair in the natural space, ``None`` or ``"fixed"``), ``theta`` the free ones in transformed
space, ``get_params``/``set_params``/``clone``; so an estimator with a ``likelihood`` parameter
exposes them as ``likelihood__<name>``. Every ``theta`` gradient is with respect to ``theta``.

The marginals ``q(f_n) = N(mu, var)`` come from the model. Elementwise likelihoods take ``y``,
``mu`` and ``var`` of the same shape (``(N, D)``: one latent function per output) and return one
value per entry; multiclass likelihoods take ``mu`` and ``var`` of shape ``(N, K)`` (one latent
function per class) with integer class indices ``y`` of shape ``(N,)`` and return one value per
row. Negative variances (round-off in the model's marginals) count as zero.
"""

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from ..kernels._contract import HyperparameterBase

__all__ = ["Likelihood", "LikelihoodVJP", "MulticlassLikelihood"]


class LikelihoodVJP(NamedTuple):
    """Adjoints of a likelihood's variational expectation.

    Parameters
    ----------
    mu : ndarray of the shape of ``mu``
        Adjoint of the marginal means.
    var : ndarray of the shape of ``var``
        Adjoint of the marginal variances.
    theta : ndarray of shape (n_theta,)
        Adjoint of the free hyperparameters in ``theta`` space.
    """

    mu: np.ndarray
    var: np.ndarray
    theta: np.ndarray


def _as_float(a, name):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        raise ValueError(f"{name} must be an array, got a scalar.")
    return a


class Likelihood(HyperparameterBase, ABC):
    """Base class of the likelihoods.

    A subclass declares its hyperparameters in ``_hyperparameters`` (``(name, transform)``
    pairs, as a kernel does), checks their values in :meth:`_check_values`, and implements
    :meth:`_expectation`, :meth:`_expectation_vjp` and :meth:`_log_density`, plus
    :meth:`_mean_and_var` (regression likelihoods) or :meth:`_proba` (classification ones).
    The public methods validate the hyperparameters and the shapes, then call those.

    Attributes
    ----------
    is_classification : bool
        Whether the targets are class indices ``0, ..., n_classes - 1``: then
        :meth:`predict_proba` gives the class probabilities, and an estimator maps its labels to
        indices (its ``classes_``) before calling the likelihood.
    is_multiclass : bool
        Whether there is one latent function per class (``mu`` of shape ``(N, K)``, ``y`` of
        shape ``(N,)``, one value per row) rather than one per output column.
    """

    _noun = "likelihood"
    is_classification = False
    is_multiclass = False

    # --------------------------------------------------------------------------- validation
    def _check_values(self):  # noqa: B027 - hook: no hyperparameter value to check by default
        """Raise ``ValueError`` naming the parameter if a hyperparameter value is invalid."""

    def _check_bounds(self):
        """``<name>_bounds`` is ``"fixed"``, ``None`` or a ``(low, high)`` pair (or one pair per
        element) with ``low <= high`` inside the transform's domain."""
        for name, transform in self._hyperparameters:
            raw = getattr(self, f"{name}_bounds")
            if raw is None or (isinstance(raw, str) and raw == "fixed"):
                continue
            message = (f"{name}_bounds must be 'fixed', None or a (low, high) pair, "
                       f"got {raw!r}.")
            if isinstance(raw, str):
                raise ValueError(message)
            try:
                b = np.asarray(raw, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(message) from None
            if b.shape[-1:] != (2,) or b.ndim > 2:
                raise ValueError(message)
            low, high = b[..., 0], b[..., 1]
            if np.any(np.isnan(b)) or np.any(low > high):
                raise ValueError(f"{name}_bounds must have low <= high, got {raw!r}.")
            if transform in ("log", "ordered") and np.any(low <= 0):
                raise ValueError(f"{name}_bounds must be positive, got {raw!r}.")
            if transform == "logit" and (np.any(low < 0) or np.any(high > 1)):
                raise ValueError(f"{name}_bounds must lie in [0, 1], got {raw!r}.")

    def _validate(self):
        self._check_values()
        self._check_bounds()

    @staticmethod
    def _positive(name, value):
        """``value`` as a float, or ``ValueError`` unless it is a finite positive number."""
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a positive number, got {value!r}.") from None
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number, got {value!r}.")
        return v

    @staticmethod
    def _positive_int(name, value):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        return int(value)

    def _marginals(self, mu, var):
        mu = np.ascontiguousarray(_as_float(mu, "mu"))
        var = np.ascontiguousarray(_as_float(var, "var"))
        if mu.shape != var.shape:
            raise ValueError(f"mu and var must have the same shape, got {mu.shape} and "
                             f"{var.shape}.")
        if self.is_multiclass and (mu.ndim != 2 or mu.shape[1] < 2):
            raise ValueError(f"{type(self).__name__} needs mu and var of shape (N, K) with "
                             f"K >= 2 classes, got {mu.shape}.")
        return mu, var

    def _targets(self, y, mu):
        """``y`` checked against ``mu``'s shape and :meth:`check_targets`."""
        y = self.check_targets(y, n_classes=mu.shape[1] if self.is_multiclass else None)
        expected = mu.shape[:1] if self.is_multiclass else mu.shape
        if y.shape != expected:
            raise ValueError(f"y must have shape {expected} to match mu of shape {mu.shape}, "
                             f"got {y.shape}.")
        return y

    # ------------------------------------------------------------------ targets and layout
    def check_targets(self, y, n_classes=None):
        """Validate targets for this likelihood.

        Parameters
        ----------
        y : array-like
            Targets: real values for regression likelihoods, class indices for
            classification ones.
        n_classes : int, default=None
            Number of classes, where known (multiclass likelihoods check the indices against
            it).

        Returns
        -------
        y : ndarray
            ``y`` as ``float64`` (regression) or ``int64`` (class indices).

        Raises
        ------
        ValueError
            If a target lies outside the likelihood's support.
        """
        y = _as_float(y, "y")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{type(self).__name__} needs finite targets.")
        return y

    def _class_indices(self, y, n_classes):
        """``y`` as int64 class indices in ``[0, n_classes)`` (``n_classes=None``: ``>= 0``)."""
        y_float = _as_float(y, "y")
        if not np.all(np.isfinite(y_float)) or np.any(y_float != np.round(y_float)):
            raise ValueError(f"{type(self).__name__} needs integer class indices as targets.")
        y_int = y_float.astype(np.int64)
        if np.any(y_int < 0) or (n_classes is not None and np.any(y_int >= n_classes)):
            bound = "" if n_classes is None else f" and < {n_classes}"
            raise ValueError(f"{type(self).__name__} needs class indices >= 0{bound}, got "
                             f"values in [{y_int.min()}, {y_int.max()}].")
        return y_int

    def n_latent(self, n_targets):
        """Number of latent functions the model needs.

        Parameters
        ----------
        n_targets : int
            Output columns for a regression likelihood, classes for a classification one.

        Returns
        -------
        n_latent : int
            One per output column (elementwise likelihoods) or per class (multiclass ones).
        """
        return int(n_targets)

    def initialize(self, y):
        """Return a copy with data-dependent defaults filled in, after checking ``y``.

        Parameters
        ----------
        y : array-like
            Training targets (class indices for a classification likelihood).

        Returns
        -------
        likelihood : Likelihood
            A new, ready-to-use likelihood; ``self`` is not modified.
        """
        self._validate()
        self.check_targets(y)
        return self.clone()

    # -------------------------------------------------------------------- the expectation
    def variational_expectation(self, y, mu, var):
        """``E_q[log p(y | f)]`` under ``q(f) = N(mu, var)``.

        Parameters
        ----------
        y : ndarray of shape (N, D), or (N,) for a multiclass likelihood
            Targets.
        mu, var : ndarray of shape (N, D), or (N, K) for a multiclass likelihood
            Marginal means and variances of the latent functions.

        Returns
        -------
        values : ndarray of shape (N, D), or (N,) for a multiclass likelihood
            Expected log-likelihood per entry (per row for a multiclass likelihood).
        """
        return self.variational_expectation_cached(y, mu, var)[0]

    def variational_expectation_cached(self, y, mu, var):
        """:meth:`variational_expectation` and the cache of its backward pass.

        The cache is the input of :meth:`variational_expectation_vjp_cached`.

        Parameters
        ----------
        y, mu, var : ndarray
            As in :meth:`variational_expectation`.

        Returns
        -------
        values : ndarray
            As in :meth:`variational_expectation`.
        cache : object
            Input of :meth:`variational_expectation_vjp_cached`.
        """
        self._validate()
        mu, var = self._marginals(mu, var)
        return self._expectation(self._targets(y, mu), mu, var)

    def variational_expectation_vjp(self, dL_dvalues, y, mu, var):
        """Backward pass of :meth:`variational_expectation`.

        Parameters
        ----------
        dL_dvalues : float or ndarray broadcastable to the values' shape
            Upstream adjoint.
        y, mu, var : ndarray
            As in the forward pass.

        Returns
        -------
        LikelihoodVJP
            Adjoints of ``mu``, ``var`` and ``theta``.
        """
        return self.variational_expectation_vjp_cached(
            dL_dvalues, self.variational_expectation_cached(y, mu, var)[1])

    def variational_expectation_vjp_cached(self, dL_dvalues, cache):
        """Backward pass from the cache of :meth:`variational_expectation_cached`.

        Parameters
        ----------
        dL_dvalues : float or ndarray broadcastable to the values' shape
            Upstream adjoint.
        cache : object
            From :meth:`variational_expectation_cached`.

        Returns
        -------
        LikelihoodVJP
            Adjoints of ``mu``, ``var`` and ``theta``.
        """
        return self._expectation_vjp(dL_dvalues, cache)

    @abstractmethod
    def _expectation(self, y, mu, var):
        """``(values, cache)`` for validated inputs."""

    @abstractmethod
    def _expectation_vjp(self, dL_dvalues, cache):
        """:class:`LikelihoodVJP` from the cache of :meth:`_expectation`."""

    # -------------------------------------------------------------------------- prediction
    def predict_log_density(self, y, mu, var):
        """Log predictive density ``log E_q[p(y | f)]``.

        Parameters
        ----------
        y, mu, var : ndarray
            As in :meth:`variational_expectation`.

        Returns
        -------
        log_density : ndarray of shape (N, D), or (N,) for a multiclass likelihood
            Per entry (per row for a multiclass likelihood).
        """
        self._validate()
        mu, var = self._marginals(mu, var)
        return self._log_density(self._targets(y, mu), mu, var)

    @abstractmethod
    def _log_density(self, y, mu, var):
        """Log predictive density for validated inputs."""

    def predict_mean_and_var(self, mu, var):
        """Mean and variance of ``y`` under the predictive ``E_q[p(y | f)]``.

        Parameters
        ----------
        mu, var : ndarray of shape (N, D)
            Marginals of the latent functions.

        Returns
        -------
        mean, variance : ndarray of shape (N, D)
            Predictive moments of the targets.
        """
        self._validate()
        return self._mean_and_var(*self._marginals(mu, var))

    def _mean_and_var(self, mu, var):
        raise NotImplementedError(f"{type(self).__name__} has no predictive mean and variance.")

    def predict_proba(self, mu, var):
        """Class probabilities ``E_q[p(y = k | f)]``.

        Parameters
        ----------
        mu, var : ndarray of shape (N, K) (multiclass) or (N, 1)
            Marginals of the latent functions.

        Returns
        -------
        proba : ndarray of shape (N, n_classes)
            Rows sum to one.
        """
        if not self.is_classification:
            raise NotImplementedError(f"{type(self).__name__} is not a classification "
                                      "likelihood; use predict_mean_and_var.")
        self._validate()
        return self._proba(*self._marginals(mu, var))

    def _proba(self, mu, var):
        raise NotImplementedError

    # ------------------------------------------------------------------------------- helpers
    def __repr__(self):
        parts = []
        for name, value in self.get_params(deep=False).items():
            if name.endswith("_bounds"):
                continue
            if value is not None and not isinstance(value, str) and np.ndim(value) == 0:
                value = float(value) if not isinstance(value, (int, np.integer)) else int(value)
                parts.append(f"{name}={value:.4g}" if isinstance(value, float) else
                             f"{name}={value}")
            elif value is not None and not isinstance(value, str):
                arr = np.asarray(value)
                parts.append(f"{name}=[{', '.join(f'{x:.3g}' for x in arr.ravel()[:6])}"
                             f"{', ...' if arr.size > 6 else ''}]")
            else:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


class MulticlassLikelihood(Likelihood):
    """A likelihood with one latent function per class: ``mu`` and ``var`` of shape ``(N, K)``,
    class indices ``y`` of shape ``(N,)``, one value per row."""

    is_classification = True
    is_multiclass = True

    def check_targets(self, y, n_classes=None):
        y = self._class_indices(y, n_classes)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"{type(self).__name__} needs class indices of shape (N,), got "
                             f"{y.shape}.")
        return y

    def n_latent(self, n_targets):
        """One latent function per class.

        Parameters
        ----------
        n_targets : int
            Number of classes (at least 2).

        Returns
        -------
        n_latent : int
            ``n_targets``.
        """
        if int(n_targets) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes, got {n_targets}.")
        return int(n_targets)

    def _log_density(self, y, mu, var):
        # log of the normalised class probability of y (those of :meth:`predict_proba`)
        p = self._proba(mu, var)
        with np.errstate(divide="ignore"):
            return np.log(p[np.arange(y.size), y])


def broadcast_adjoint(dL_dvalues, shape):
    """``dL_dvalues`` as a float64 array of ``shape`` (a scalar or broadcastable array)."""
    return np.broadcast_to(np.asarray(dL_dvalues, dtype=np.float64), shape)
