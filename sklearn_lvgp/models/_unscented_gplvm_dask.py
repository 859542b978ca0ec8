"""``UnscentedGPLVM.fit`` on a dask array or DataFrame: rows and q(x_n) stay partitioned.

The fit is the alternating optimiser of :mod:`sklearn_lvgp.optim._alternating` run on
:class:`~sklearn_lvgp.optim._alternating.DaskLocals`: the local steps run where the partitions
live, each global-step evaluation moves only M × M-sized messages, and the initial PCA needs
only the D × D Gram matrix of the data. It makes the same random draws, in the same order, as
the in-memory fit with ``optimizer="alternating"``, takes its data-derived defaults (centring,
PCA start, scales) from the same sums on the pairwise tree of the row index, and the engine's
sums do not depend on the partitions: both fits give the same model, bit for bit (``elbo_``
up to the rounding of its final KL sum).
"""

import numpy as np

from .._core.init import pairwise_pca_latents
from .._core.scaling import (
    pairwise_column_moments,
    pairwise_column_variances,
    pairwise_normalization,
)
from ..engine._dask import DaskPairwiseRows, DaskRows, _dask
from ..optim._alternating import DaskLocals
from ._unscented_gplvm_setup import initial_model, run_alternating, warn_if_not_ard

__all__ = ["fit_gplvm_dask"]


def _initial_means(est, Y, Q, random_state):
    """The in-memory ``_initial_means`` on a dask array (same draws, same values)."""
    _, da = _dask()
    if isinstance(est.init, str):
        if est.init == "random":
            mu = 0.1 * random_state.standard_normal((Y.shape[0], Q))
            return da.from_array(mu, chunks=(Y.chunks[0], Q))
        return pairwise_pca_latents(DaskPairwiseRows(Y), Q, scaled=est.init == "pca")
    mu = est._check_latent("init", est.init, Y.shape[0])
    return da.from_array(mu, chunks=(Y.chunks[0], Q))


def fit_gplvm_dask(est, X, random_state):
    """Fit ``est`` (an ``UnscentedGPLVM``) on the dask collection ``X``; returns ``est``."""
    dask, da = _dask()
    rows = DaskRows({"X": X})
    X_d = rows.arrays["X"]
    est._set_dask_features(rows)
    est._check_params(X_d, None)
    if est.expectation == "monte_carlo":
        raise ValueError("A fit on dask input needs a deterministic expectation rule; "
                         "expectation='monte_carlo' is not available there.")
    if est.optimizer not in ("auto", "alternating"):
        raise ValueError("A fit on dask input uses optimizer='alternating' (or 'auto'); got "
                         f"optimizer={est.optimizer!r}.")
    Q = est.n_components
    mean, scale = pairwise_normalization(DaskPairwiseRows(X_d), est.normalize_X)
    rows = DaskRows({"Y": (X_d - mean) / scale})
    Y = rows.arrays["Y"]
    mu0 = _initial_means(est, Y, Q, random_state).persist()
    var_y = float(np.mean(pairwise_column_variances(DaskPairwiseRows(Y))[1]))
    scales = (pairwise_column_moments(DaskPairwiseRows(mu0))[1] if est._kernel is None
              else None)
    kernel, name, rule, _, Z0, noise0, jitter, var_y = initial_model(est, mu0, scales, var_y,
                                                                     random_state)
    random_state.randint(np.iinfo(np.int32).max)  # the in-memory fit's Monte Carlo seed draw
    state = DaskLocals(rows)
    state.set_locals(mu0, da.full(mu0.shape, float(est.latent_variance_init),
                                  chunks=mu0.chunks))
    work = kernel.clone()
    out, g = run_alternating(est, state, work, Z0, noise0, rule, jitter, var_y)
    F, _, post = state.evaluate(work, g["Z"], float(g["noise"]), rule, jitter=jitter,
                                max_tries=6)
    est.X_mean_, est.X_scale_ = mean, scale
    est.kernel_ = work
    est.latent_mean_ = out.mu
    est.latent_variance_ = out.S
    est.inducing_inputs_ = g["Z"]
    est.noise_variance_ = float(g["noise"])
    est.expectation_ = name
    est.optimizer_ = "alternating"
    est.n_iter_ = out.n_rounds
    est.elbo_history_ = out.history
    est.relevance_ = work.relevance(Q)
    warn_if_not_ard(est)
    est.elbo_ = float(F - state.kl())
    est._jitter = jitter
    est._rule = rule
    est._post = post
    est._Y = None  # the rows stay on the workers: new rows start from the inducing inputs
    est._row_index = {}
    est._transform_seed = int(random_state.randint(np.iinfo(np.int32).max))
    return est
