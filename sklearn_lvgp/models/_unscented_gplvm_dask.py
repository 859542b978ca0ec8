"""``UnscentedGPLVM.fit`` on a dask array or DataFrame: rows and q(x_n) stay partitioned.

The fit is the alternating optimiser of :mod:`sklearn_lvgp.optim._alternating` run on
:class:`~sklearn_lvgp.optim._alternating.DaskLocals`: the local steps run where the partitions
live, each global-step evaluation moves only M × M-sized messages, and the initial PCA needs
only the D × D Gram matrix of the data. It makes the same random draws, in the same order, as
the in-memory fit with ``optimizer="alternating"``, so both give the same model up to rounding.
"""

import numpy as np

from .._core.scaling import column_moments, normalization
from ..engine._dask import DaskRows, _dask
from ..optim._alternating import DaskLocals
from ._unscented_gplvm_setup import initial_model, run_alternating, warn_if_not_ard

__all__ = ["fit_gplvm_dask"]


def _pca_latents(Y, Q):
    """:func:`sklearn_lvgp._core.init.pca_latents` of a dask array, from its D × D Gram matrix."""
    dask, da = _dask()
    N, D = Y.shape
    Yc = Y - Y.mean(axis=0)
    q = min(Q, D, max(N - 1, 1))
    gram = np.asarray((Yc.T @ Yc).compute())
    evals, evecs = np.linalg.eigh(gram)
    V = evecs[:, np.argsort(evals)[::-1]].T  # rows: right singular vectors, largest first
    signs = np.sign(V[np.arange(D), np.argmax(np.abs(V), axis=1)])
    signs[signs == 0] = 1.0
    cols = [Yc @ (V[:q] * signs[:q, None]).T]
    if q < Q:
        scale = float(cols[0].std().compute()) if q > 0 else 1.0
        scale = scale if scale > 0 else 1.0
        t = da.linspace(-1.0, 1.0, N, chunks=(Y.chunks[0],))
        cols += [1e-2 * scale * da.sin((j + 1) * np.pi * t)[:, None] for j in range(q, Q)]
    return da.concatenate(cols, axis=1).rechunk({0: Y.chunks[0], 1: -1})


def _initial_means(est, Y, Q, random_state):
    """The in-memory ``_initial_means`` on a dask array (same draws, same values)."""
    _, da = _dask()
    if isinstance(est.init, str):
        if est.init == "random":
            mu = 0.1 * random_state.standard_normal((Y.shape[0], Q))
            return da.from_array(mu, chunks=(Y.chunks[0], Q))
        X = _pca_latents(Y, Q)
        if est.init == "pca":
            top = float(X[:, 0].std().compute())
            X = X / top if top > 0 else X
        return X
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
    mean, scale = (np.asarray(a) for a in dask.compute(*normalization(X_d, est.normalize_X)))
    rows = DaskRows({"Y": (X_d - mean) / scale})
    Y = rows.arrays["Y"]
    mu0 = _initial_means(est, Y, Q, random_state).persist()
    var_y, scales = dask.compute(Y.var(axis=0).mean(), column_moments(mu0)[1])
    kernel, name, rule, _, Z0, noise0, jitter, var_y = initial_model(est,
        mu0, np.asarray(scales) if est._kernel is None else None, float(var_y), random_state)
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
