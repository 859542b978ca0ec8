"""Shared estimator scaffolding: the ``fit`` template method of every sklearn_lvgp model."""

import copy
import warnings
from contextlib import contextmanager
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ._compile.precompile import compile_ahead, plan_key
from ._compile.report import compile_report
from ._core.interrupt import interrupts_unwrapped
from ._core.parallel import threads
from ._core.progress import check_callback, fit_progress
from ._core.scaling import normalization
from ._core.validation import (
    check_bool,
    check_early_stopping,
    check_float,
    check_int,
    check_natgrad_gamma,
    check_numeric_targets,
    check_observed_columns,
    check_option,
)
from ._core.warn import InconsistentVersionWarning, warn
from ._version import version
from .bounds._dsvi_init import hidden_widths, initial_model, layer_kernels
from .bounds._dsvi_likelihood import prediction_paths
from .bounds._iwvi import LatentDSVI
from .engine._dask import DaskRows, is_dask_collection, map_row_blocks
from .kernels import as_lvgp_kernel, split_white
from .kernels._diagnostics import flat_kernel
from .optim._adam import AdamState, run_adam, warn_budget_spent
from .optim._lbfgsb import minimize_lbfgsb

__all__ = ["_BaseLVGP", "_BaseLVGPRegressor", "_BaseDeepGP"]


def _snapshot(value):
    """What to keep of an attribute so a failed fit can put it back.

    Arrays and fitted objects are replaced, not modified, by a fit; the exceptions are the
    optimiser and random-generator states and history lists, which are updated in place.
    """
    if isinstance(value, list):
        return list(value)
    if isinstance(value, (np.random.RandomState, np.random.Generator, AdamState)):
        return copy.deepcopy(value)
    return value


class _BaseLVGP(BaseEstimator):
    """Template: validate the data and parameters, seed, enter the thread context, call ``_fit``.

    The fit's ``callback(estimator, info)`` reaches every optimiser loop through
    :func:`sklearn_lvgp._core.progress.fit_progress`. Subclasses implement ``_check_params(X, y)``
    (hand-written parameter checks, raising ``ValueError``/``TypeError``) and
    ``_fit(X, y, random_state)``. They never reassign a constructor parameter.
    """

    def _validate_fit_data(self, X, y):
        """Validated float64 ``X`` (and ``y``); unsupervised here, supervised models override.

        A model whose ``allow_nan`` input tag is set takes NaN entries (missing values; a
        column with none observed is refused by name), never infinite ones.
        """
        if not self.__sklearn_tags__().input_tags.allow_nan:
            return validate_data(self, X, dtype=np.float64), None
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan")
        check_observed_columns(X, type(self).__name__)
        return X, None

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
        return self._fit_template(X, y)

    def _fit_template(self, X, y, **fit_params):
        """The template itself; models with extra ``fit`` arguments pass them on here."""
        if is_dask_collection(X) or is_dask_collection(y):
            check_int("verbose", self.verbose, min_value=-1)
            check_callback(self.callback)
            random_state = check_random_state(self.random_state)
            with self._all_or_nothing(), threads(self.n_jobs), \
                    fit_progress(self._bound_callback()), compile_report(*self._plan()):
                self._fit_dask(X, y, random_state, **fit_params)
            self._warn_at_bounds()
            return self
        with self._all_or_nothing():
            X, y = self._validate_fit_data(X, y)
            self._check_params(X, y)
            check_int("verbose", self.verbose, min_value=-1)
            check_callback(self.callback)
            random_state = check_random_state(self.random_state)
            with threads(self.n_jobs), fit_progress(self._bound_callback()), \
                    compile_report(*self._plan()), compile_ahead(*self._plan()):
                self._fit(X, y, random_state, **fit_params)
        self._warn_at_bounds()
        self._warn_flat_kernels(X)
        return self

    def _bound_callback(self):
        """The user's ``callback(estimator, info)`` bound to this estimator (or ``None``)."""
        return None if self.callback is None else partial(self.callback, self)

    def _plan(self):
        """``(plan key, name, verbose)`` of this fit for the compile notice and helper."""
        name = type(self).__name__
        key = plan_key(name, getattr(self, "kernel", None), getattr(self, "expectation", None))
        return key, name, self.verbose

    def _continues_fit(self, key):
        """Whether this fit is a ``warm_start`` continuation of the previous one: ``key`` (the
        data's shapes and the structural parameters) must equal the previous fit's. Remembers
        ``key`` for the next fit; a fit that fails is rolled back with it (``_all_or_nothing``).
        """
        continuing = bool(self.warm_start) and key == getattr(self, "_warm_key", None)
        self._warm_key = key
        return continuing

    def _optimise(self, optimizer, x0, bounds, *, full=None, minibatch=None, n_data=None,
                  batch_size=None, random_state=None, name=None, max_iter=None,
                  warn_unconverged=True, **adam_options):
        """The shared optimiser choice: L-BFGS-B on ``full`` or Adam on ``minibatch``.

        Parameters
        ----------
        optimizer : {"lbfgs", "adam"}
        x0 : ndarray
            Starting point (flat, unconstrained).
        bounds : ndarray of shape (P, 2)
            Box bounds (``±inf`` for none).
        full : callable
            ``full(x) -> (-bound, -gradient)`` on all rows (L-BFGS-B).
        minibatch : callable
            ``minibatch(x, idx) -> (-estimate, -gradient)`` on rows ``idx`` (Adam).
        n_data, batch_size : int
            Rows and rows per Adam step.
        random_state : numpy.random.RandomState
            Source of the minibatches.
        name : str
            Used in messages (default: the class name).
        max_iter : int or None
            Iterations of this call (default ``self.max_iter``).
        warn_unconverged : bool, default=True
            Adam: emit ``ConvergenceWarning`` when ``max_iter`` ends the run before its
            stopping rule (``tol`` or early stopping) does, as L-BFGS-B does; ``False`` for a
            fixed number of steps (``partial_fit``'s pass over its rows).
        **adam_options
            Passed on to :func:`sklearn_lvgp.optim._adam.run_adam` (schedule, natural
            gradients, ...).

        Returns
        -------
        x : ndarray
            Final parameters.
        history : ndarray
            The bound (or its minibatch estimate) at every iteration.
        n_iter : int
        validation_scores : ndarray or None
            Adam's held-out checks when ``adam_options`` has a ``validation``, else ``None``.
        """
        name = type(self).__name__ if name is None else name
        max_iter = self.max_iter if max_iter is None else max_iter
        if optimizer == "lbfgs":
            res = minimize_lbfgsb(full, x0, bounds=bounds, max_iter=max_iter,
                                  verbose=self.verbose, name=name, stop_tol=self.tol)
            # a start that is already optimal takes no iteration: its bound is the history
            history = res.history if len(res.history) else [res.fun]
            return res.x, -np.asarray(history, dtype=np.float64), int(res.n_iter), None
        adam_options.setdefault("stop_tol", self.tol)
        res = run_adam(minibatch, x0, n_data=n_data, batch_size=batch_size, max_iter=max_iter,
                       learning_rate=self.learning_rate, random_state=random_state,
                       bounds=bounds, verbose=self.verbose, name=name, **adam_options)
        validation = adam_options.get("validation") is not None
        if warn_unconverged and (validation or adam_options["stop_tol"] is not None):
            warn_budget_spent(name, res, max_iter, adam_options.get("tol", 1e-4) if validation
                              else adam_options["stop_tol"], validation=validation)
        checks = res.validation_history if adam_options.get("validation") else None
        return res.x, -np.asarray(res.history, dtype=np.float64), int(res.n_iter), checks

    def _fitted_kernels(self):
        """``(attribute, kernel)`` of every fitted kernel (``kernel_``, the LDGD paths, layers)."""
        out = [(name, getattr(self, name)) for name in ("kernel_", "kernel_reg_", "kernel_cls_")
               if getattr(self, name, None) is not None]
        for i, layer in enumerate(getattr(self, "layers_", None) or ()):
            out.append((f"layers_[{i}].kernel", layer.kernel))
        return out

    def _warn_at_bounds(self):
        """``ConvergenceWarning`` for each fitted hyperparameter left at one of its bounds.

        A hyperparameter stopped by its bound usually means data in other units than the
        kernel's bounds assume (or a kernel that does not suit the data): refit with normalised
        data or wider bounds, as scikit-learn's ``GaussianProcessRegressor`` advises. A kernel
        amplitude at its upper bound with ``normalize_y=False`` names ``normalize_y``: a zero-mean
        GP on targets far from zero puts their offset into the amplitude; one at its lower bound
        means the kernel found no signal. A length
        scale at its upper bound is not reported: that is automatic relevance determination
        switching an input off, a result rather than a failure.
        """
        zero_mean = getattr(self, "normalize_y", None) is False
        for attribute, kernel in self._fitted_kernels():
            theta, bounds = kernel.theta, kernel.bounds
            entries = [(h.name, f"{h.name}[{j}]" if h.n_elements > 1 else h.name)
                       for h in kernel.hyperparameters if not h.fixed for j in range(h.n_elements)]
            for (name, label), t, (lo, hi) in zip(entries, theta, bounds, strict=True):
                side = ("lower" if np.isfinite(lo) and t - lo < 1e-3 else
                        "upper" if np.isfinite(hi) and hi - t < 1e-3 else None)
                if side == "upper" and name.rsplit("__", 1)[-1] == "length_scale":
                    continue
                amplitude = name.rsplit("__", 1)[-1] in ("variance", "variances")
                remedy = ("The kernel finds no signal in the targets (their variation is "
                          "fitted as noise): check that the inputs explain them, try another "
                          "kernel (or GPCDE for targets with several branches)"
                          if amplitude and side == "lower" else
                          "Pass normalize_y=True (the GP has a zero mean: targets far from zero "
                          "are fitted as signal or noise), normalise X"
                          if amplitude and zero_mean else "Normalise the data")
                if side is not None:
                    warn(f"{type(self).__name__}: the fitted {attribute} hyperparameter {label} "
                         f"is at its {side} bound. {remedy} or widen {name}_bounds "
                         "and refit.", ConvergenceWarning)

    def _kernel_inputs(self, X):
        """``(attribute, kernel, inputs)`` of the fitted kernels whose training inputs are known
        from the fit data ``X``: the first layer of a deep GP (on the standardised ``X``)."""
        layers = getattr(self, "layers_", None)
        if not layers or getattr(self, "X_scale_", None) is None or np.isnan(X).any():
            return []
        return [("layers_[0].kernel", layers[0].kernel, (X - self.X_mean_) / self.X_scale_)]

    def _warn_flat_kernels(self, X):
        """``UserWarning`` for a kernel that fixed length scales leave constant (or diagonal)
        over its training inputs (:func:`~sklearn_lvgp.kernels._diagnostics.flat_kernel`)."""
        for attribute, kernel, inputs in self._kernel_inputs(X):
            found = flat_kernel(kernel, inputs)
            if found is None:
                continue
            kind, names = found
            what = ("numerically constant over the training inputs (their correlations are all "
                    "within 1e-6 of one), so the model predicts about the same value everywhere"
                    if kind == "constant" else
                    "numerically diagonal over the training inputs (no two are correlated above "
                    "1e-8), so away from them the model predicts the prior mean")
            values = ", ".join(f"{n}={kernel.get_params()[n]!r}" for n in names)
            verb = "makes" if len(names) == 1 else "make"
            warn(f"{type(self).__name__}: the fixed {values} of {attribute} {verb} the kernel "
                 f"{what}. Set {' and '.join(names)} to the scale of the inputs, or let the fit "
                 f"choose it (remove \"fixed\" from {names[0]}_bounds).", UserWarning)

    @contextmanager
    def _all_or_nothing(self):
        """Keep the fit's changes only if it completes.

        On any exception, ``KeyboardInterrupt`` included, the estimator's attributes are put
        back as they were: an interrupted first fit leaves it unfitted, an interrupted refit,
        warm start or ``partial_fit`` leaves the previous fitted state (optimiser state and
        random generators included, so a warm start after an interrupt continues from it).
        An interrupt that numba wrapped in a ``SystemError`` is re-raised as the
        ``KeyboardInterrupt`` it is (:mod:`sklearn_lvgp._core.interrupt`), so
        ``except KeyboardInterrupt`` catches it.
        """
        params = self.get_params(deep=False)  # stored verbatim: never copied or replaced
        saved = {key: value if key in params else _snapshot(value)
                 for key, value in self.__dict__.items()}
        try:
            with interrupts_unwrapped():
                yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def __getstate__(self):
        state = super().__getstate__()
        state["_sklearn_lvgp_version"] = version()
        return state

    def __setstate__(self, state):
        saved = state.pop("_sklearn_lvgp_version", "pre-0.1")
        if saved != version():
            warnings.warn(InconsistentVersionWarning(type(self).__name__, version(), saved),
                          stacklevel=2)
        super().__setstate__(state)

    def _kernel_and_noise(self, input_dim):
        """``kernel`` validated and converted, and the starting noise variance it implies.

        For the estimators with a Gaussian noise of their own: a scikit-learn ``WhiteKernel``
        summand would be a second, unidentifiable noise term, so it is merged into the model's
        noise (its ``noise_level`` is the starting noise variance unless
        ``noise_variance_init`` is set) with a note; ``None`` when there is none.
        """
        rest, noise = split_white(self.kernel)
        if noise is not None:
            start = (f"its noise_level ({noise:.3g}) is the starting noise variance (set "
                     "noise_variance_init to choose another)"
                     if self.noise_variance_init is None else
                     f"the starting noise variance is noise_variance_init="
                     f"{self.noise_variance_init!r}, not its noise_level ({noise:.3g})")
            warn(f"{type(self).__name__}: the WhiteKernel in kernel duplicates the model's own "
                 f"Gaussian noise and was merged into it: {start}, and its noise_level_bounds "
                 "are not used (the noise variance is fitted). Remove the WhiteKernel from "
                 "kernel to silence this note.", UserWarning)
        return as_lvgp_kernel(rest, input_dim=input_dim), noise

    def _check_params(self, X, y):
        raise NotImplementedError

    def _fit_dask(self, X, y, random_state, **fit_params):
        raise TypeError(
            f"{type(self).__name__} does not fit on dask collections; call .compute() first.")

    def _set_dask_features(self, rows):
        """``n_features_in_`` and ``feature_names_in_`` of a fit on :class:`DaskRows`."""
        self.n_features_in_ = int(rows.shapes[next(iter(rows.shapes))][1])
        if rows.columns is not None and all(isinstance(c, str) for c in rows.columns):
            self.feature_names_in_ = np.asarray(rows.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _fit(self, X, y, random_state):
        raise NotImplementedError

    def _refuse_on_dask(self, *options):
        """A clear error for the first of ``options``, each ``(is_set, setting, why)``, that a
        fit on dask input does not support."""
        for is_set, setting, why in options:
            if is_set:
                raise ValueError(f"{type(self).__name__} on dask input does not support "
                                 f"{setting} ({why}); fit on numpy arrays for this setting.")

    def _record_iterations(self, n_iter, history, continuing):
        """``n_iter_`` and ``elbo_history_`` of this fit, added to the previous fit's when a
        ``warm_start`` fit continues it."""
        self.n_iter_ = n_iter + (self.n_iter_ if continuing else 0)
        self.elbo_history_ = np.concatenate([self.elbo_history_ if continuing else [],
                                             np.asarray(history, dtype=float)])

    def _check_early_stopping(self, n_samples, n_inducing=None):
        """The early-stopping parameters, and enough of the ``n_samples`` rows to hold out (and
        to place ``n_inducing`` inducing inputs on the rest)."""
        check_early_stopping(self.early_stopping, self.validation_fraction,
                             self.n_iter_no_change, n_samples)
        n_train = n_samples - max(1, int(round(self.validation_fraction * n_samples)))
        if self.early_stopping and n_inducing is not None and n_inducing > n_train:
            raise ValueError(
                f"n_inducing={n_inducing} is larger than the {n_train} rows left for "
                f"training after holding out validation_fraction={self.validation_fraction} "
                "for early stopping; lower n_inducing or validation_fraction.")

    def _held_out_rows(self, n_rows, random_state):
        """Sorted ``(train, held_out)`` row indices with ``early_stopping`` (models with one
        latent per row: the held-out rows get none during the fit), else ``(None, None)``, no
        random numbers drawn, so fits without early stopping are unchanged."""
        if not self.early_stopping:
            return None, None
        perm = random_state.permutation(n_rows)
        n_val = max(1, int(round(self.validation_fraction * n_rows)))
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    def _validation_split(self, X, Y, random_state):
        """``(X_train, Y_train, X_val, Y_val)``: ``validation_fraction`` of the rows held out
        for early stopping (at least one), in a random order."""
        perm = random_state.permutation(X.shape[0])
        n_val = max(1, int(round(self.validation_fraction * X.shape[0])))
        return X[perm[n_val:]], Y[perm[n_val:]], X[perm[:n_val]], Y[perm[:n_val]]

    # ------------------------------------------------- dask dispatch of row-wise predictions
    def _on_partitions(self, method, X, out_columns, n_outputs=1, **kwargs):
        """``method(block, **kwargs)`` applied partition by partition to a dask ``X``: lazy
        dask arrays of ``out_columns`` columns (``n_outputs`` of them)."""
        check_is_fitted(self)
        return map_row_blocks(lambda block: method(block, **kwargs), X, out_columns, n_outputs)

    # -------------------------------------- early stopping on held-out rows (models with latents)
    def _held_out_scorer(self, commit, score):
        """``scorer(flat)`` for the optimiser's held-out checks: ``score(model)`` of a shallow
        copy of this estimator on which ``commit(model, flat)`` has set the fitted state of the
        parameters ``flat``; run with the fit's callback off and the ``ConvergenceWarning`` of
        the inner inference (a fixed budget) silenced."""
        def scorer(flat):
            model = copy.copy(self)
            with fit_progress(None), warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                commit(model, flat)
                return float(score(model))

        return scorer

    def _fill_held_out_latents(self, train, held_out, infer):
        """After a fit on rows ``train``: ``latent_mean_`` and ``latent_variance_`` of every
        row, those of the ``held_out`` rows from ``infer()`` -> ``(mean, variance)`` (their
        ``q(x*)`` with the final model; its ``ConvergenceWarning`` silenced)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mu_v, var_v = infer()
        mu = np.empty((train.size + held_out.size, self.latent_mean_.shape[1]))
        var = np.empty_like(mu)
        mu[train], var[train] = self.latent_mean_, self.latent_variance_
        mu[held_out], var[held_out] = mu_v, var_v
        self.latent_mean_, self.latent_variance_ = mu, var


class _BaseLatentTransformer(TransformerMixin, _BaseLVGP):
    """What the latent-variable transformers (``UnscentedGPLVM``, ``LDGD``) share: ``transform``
    to the posterior latent q(x*) of rows, partition by partition on dask, and the output
    shape. A subclass provides ``_latent_moments(X) -> (mean, std)`` of raw rows."""

    def transform(self, X, return_std=False):
        """Posterior latent means (and standard deviations) of rows of data.

        Each row's q(x*) is its own problem with the model fixed (how it is inferred: the
        estimator's description of ``transform_max_iter``), so a dask array or DataFrame is
        transformed partition by partition (lazy dask arrays are returned).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Rows in data space.
        return_std : bool, default=False
            Also return the latent standard deviations.

        Returns
        -------
        mean : ndarray of shape (n, n_components)
            Latent means.
        std : ndarray of shape (n, n_components)
            Latent standard deviations (only if ``return_std``).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return self._on_partitions(self.transform, X, self.n_components,
                                       2 if return_std else 1, return_std=return_std)
        mean, std = self._latent_moments(X)
        return (mean, std) if return_std else mean

    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class _BaseLVGPRegressor(_BaseLVGP):
    """Template for the regressors: numeric (multi-output) targets, checked the same way."""

    def _predict_on_partitions(self, X, return_std=False, return_cov=False, **kwargs):
        """``predict`` of a dask ``X``: one task per row partition, dask arrays back (the
        means and standard deviations are row-wise; a joint covariance couples all rows)."""
        check_is_fitted(self)
        if return_cov:
            raise ValueError("predict on a dask X supports return_std only (no return_cov): "
                             "the joint covariance couples all rows.")
        return map_row_blocks(lambda b: self.predict(b, return_std=return_std, **kwargs), X,
                              None if self._y_ndim == 1 else self.y_mean_.size,
                              2 if return_std else 1)

    def _validate_fit_data(self, X, y, reset=True):
        if sp.issparse(y):  # a GP's targets are dense; scikit-learn lets sparse ones through
            y = y.toarray()
        X, y = validate_data(self, X, y, dtype=np.float64, multi_output=True, y_numeric=True,
                             reset=reset)
        return X, check_numeric_targets(y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # every regressor takes (n, n_targets) targets
        tags.target_tags.single_output = True
        return tags

    def _standardised_inputs(self, X):
        """Validated new inputs, standardised with the training statistics."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.X_mean_) / self.X_scale_

    def _held_out(self, X, Y, random_state):
        """``(X_train, Y_train, held_out)``: with ``early_stopping`` the rows of
        :meth:`_validation_split` and ``held_out = (X_val, Y_val)``, else all rows and ``None``."""
        if not self.early_stopping:
            return X, Y, None
        X_train, Y_train, X_val, Y_val = self._validation_split(X, Y, random_state)
        return X_train, Y_train, (X_val, Y_val)

    def _targets_2d(self, y):
        """``y`` as ``(n_samples, n_targets)``, remembering whether it was 1-D."""
        self._y_ndim = np.ndim(y)
        return np.reshape(y, (-1, 1)) if self._y_ndim == 1 else y

    def _target_moments(self, Y):
        """Mean and scale of the ``normalize_y`` rule for targets ``Y`` of shape (n, n_targets)."""
        return normalization(Y, "standardize" if self.normalize_y else "none")

    def _target_shape(self, A):
        """Drop the target axis (axis 1) of a prediction when the model was fitted on 1-D y."""
        return A[:, 0] if self._y_ndim == 1 else A

    @staticmethod
    def _check_targets(y, n_rows, n_targets):
        """``y`` as a finite (n_rows, n_targets) float array, or a clear error."""
        y = y.toarray() if sp.issparse(y) else y
        Y = np.array(check_numeric_targets(np.asarray(y)), dtype=np.float64)
        Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
        if Y.shape != (n_rows, n_targets):
            raise ValueError(f"y must have {n_rows} rows and {n_targets} target column(s), "
                             f"got shape {np.shape(y)}.")
        if not np.all(np.isfinite(Y)):
            raise ValueError("y contains NaN or infinity.")
        return Y

    # --------------------------------------------------------------- dask fits of a regressor
    def _dask_supervised_rows(self, X, y):
        """The dask ``X`` and ``y`` of a fit as the arrays of one :class:`DaskRows` (``y`` as
        columns), after ``n_features_in_``, the parameter checks and ``_y_ndim``."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None.")
        rows = DaskRows({"X": X, "y": y})
        self._set_dask_features(rows)
        X_d, Y_d = rows.arrays["X"], rows.arrays["y"]
        self._check_params(X_d, Y_d)
        self._y_ndim = 1 if len(y.shape) == 1 else 2
        return X_d, Y_d


class _BaseDeepGP(_BaseLVGP):
    """The life cycle of the deep-GP estimators (``DeepGP``, ``DeepGPClassifier``): the model
    and its starting point, the optimisation (Adam with optional natural-gradient steps on the
    last layer, or L-BFGS-B), the fitted layers and the prediction paths.

    The model is :class:`~sklearn_lvgp.bounds._dsvi_model._DSVI` (with latent covariates
    :class:`~sklearn_lvgp.bounds._iwvi.LatentDSVI`). A subclass provides ``_architecture``
    (what a warm start must share), ``_model_params()`` (the parameters of
    :func:`~sklearn_lvgp.bounds._dsvi_init.initial_model`), ``_kernels`` (set by its
    ``_check_params``) and ``_set_likelihood(fitted)`` (its fitted likelihood attributes).
    """

    def _check_deep_gp_params(self, X):
        """The parameters both deep-GP estimators share (and their layer kernels)."""
        check_int("n_layers", self.n_layers, min_value=1)
        hidden_widths(self.hidden_dims, self.n_layers, X.shape[1])
        check_int("n_inducing", self.n_inducing, min_value=1)
        check_bool("whiten", self.whiten)
        check_int("n_samples", self.n_samples, min_value=1)
        check_int("n_predict_samples", self.n_predict_samples, min_value=1)
        check_option("expectation", self.expectation, ("monte_carlo", "unscented"))
        check_option("optimizer", self.optimizer, ("adam", "lbfgs"))
        check_float("learning_rate", self.learning_rate, 0.0, exclusive_min=True)
        check_option("learning_rate_schedule", self.learning_rate_schedule,
                     ("constant", "staircase", "cosine"))
        check_int("batch_size", self.batch_size, min_value=1, allow_none=True)
        check_int("max_iter", self.max_iter, min_value=1)
        if check_natgrad_gamma(self.natgrad_gamma) is not None and self.optimizer != "adam":
            raise ValueError("natgrad_gamma is used with optimizer='adam' only.")
        check_float("tol", self.tol, 0.0, allow_none=True)
        self._check_early_stopping(X.shape[0])
        check_option("positive_transform", self.positive_transform, ("softplus", "log"))
        check_float("jitter", self.jitter, 0.0)
        check_bool("warm_start", self.warm_start)
        check_option("inner_layer_init", self.inner_layer_init, ("prior", "collapsed"))
        self._kernels = layer_kernels(self.kernel, self.n_layers)

    def _latent(self):
        return int(getattr(self, "latent_dim", None) or 0)

    def _initialise(self, Xs, n_targets, random_state):
        """The model and its initial parameters from standardised inputs ``Xs``
        (:func:`~sklearn_lvgp.bounds._dsvi_init.initial_model`), a fresh optimiser state."""
        self._arch = self._architecture(Xs.shape[1], n_targets)
        self._model, self._x = initial_model(Xs, n_targets, self._model_params(), self._kernels,
                                             random_state, LatentDSVI)
        self._state = AdamState(self._x.size)
        self.n_iter_ = 0
        self._elbo_hist = []

    def _batch_rows(self, n):
        """Rows per Adam step: ``batch_size`` clipped to ``n`` (``None``: all ``n``)."""
        return n if self.batch_size is None else min(int(self.batch_size), n)

    def _run(self, Xs, Ys, rs, max_iter, early_stopping, n_total=None, force_adam=False,
             rows=None):
        """The optimisation and the fitted attributes. ``n_total`` is the bound's ``N`` when
        it is not the number of rows (``partial_fit``); ``rows``, when given, holds the rows
        elsewhere (a Dask fit: ``Xs`` and ``Ys`` are then ``None``)."""
        model = self._model
        self.validation_scores_ = None
        if early_stopping:
            Xs, Ys, Xv, Yv = self._validation_split(Xs, Ys, rs)
        N = n_total if Xs is None else Xs.shape[0]
        lbfgs = self.optimizer == "lbfgs" and not force_adam
        if lbfgs and self.n_iter_ == 0 and model.likelihood is None:
            # start the last layer at its optimal q(u) for the initial hyperparameters (one
            # γ = 1 natural-gradient step, Salimbeni 2020, §3.4.1): from q(u) = p(u) the first
            # line search of L-BFGS tends to jump to the all-noise optimum
            self._x = model.natgrad(self._x, Xs, Ys, 1.0, self.n_samples, 1.0, rs)
        full, minibatch, natgrad = model.objectives(Xs, Ys, N if n_total is None else n_total,
                                                    self.n_samples, rs, rows)
        use_ngd = self.natgrad_gamma is not None
        validation = None
        if early_stopping:
            paths = self._draw_predict_eps(rs, min(10, self.n_predict_samples))
            validation = partial(model.mean_log_density, X=Xv, Y=Yv, paths=paths)
        adam = {} if lbfgs else {
            "schedule": self.learning_rate_schedule, "horizon": self.max_iter,
            "natgrad": natgrad if use_ngd else None, "gamma": self.natgrad_gamma,
            "frozen": model.last_q_mask() if use_ngd else None, "validation": validation,
            "n_iter_no_change": self.n_iter_no_change, "state": self._state,
            "tol": 1e-4 if self.tol is None else self.tol}
        self._x, hist, n_iter, self.validation_scores_ = self._optimise(
            "lbfgs" if lbfgs else "adam", self._x, model.bounds(), full=full,
            minibatch=minibatch, n_data=N, batch_size=self._batch_rows(N), random_state=rs,
            max_iter=max_iter, warn_unconverged=not force_adam, **adam)  # partial_fit: a pass
        self.n_iter_ += n_iter
        self._elbo_hist.extend(hist.tolist())
        self.elbo_ = float(np.mean(hist[-(1 if lbfgs else 100):]))
        self.elbo_history_ = np.asarray(self._elbo_hist)
        layers, fitted, _ = model.unpack(self._x)
        self._set_likelihood(fitted)
        self.layers_ = layers
        self.inducing_inputs_ = [layer.Z for layer in layers]
        self._predict_eps = self._draw_predict_eps(rs, self.n_predict_samples)

    def _draw_predict_eps(self, rs, S):
        return prediction_paths(self._model.dims, self._latent(), rs, S)

    def _path_components(self, Xs):
        """Last-layer marginals ``(S, n, D)`` along the prediction paths at standardised
        inputs ``Xs``, and the fitted noise variance or likelihood."""
        with threads(self.n_jobs):
            return self._model.path_components(self._x, Xs, self._predict_eps)
