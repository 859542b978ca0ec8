"""Test-time computations of :class:`~sklearn_lvgp.UnscentedGPLVM`, with the model fixed.

``q(x*)`` of unseen rows (started at the nearest reference row's ``q(x)``, each row its own
L-BFGS problem; de Souza et al. 2021), the latents of validated rows (stored for training
rows), the per-row held-out bound of ``score_samples`` and the moments of the data-space
predictive at Gaussian latent inputs (Girard et al. 2003), in chunks of rows.
"""

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.blocks import row_blocks
from .._core.parallel import threads
from .._core.validation import check_data_scale
from .._core.warn import warn
from ..bounds._collapsed import psi_row_cost, rule_rows
from ..bounds._collapsed_global import PREDICT_CHUNK_ROWS, chunked_predictive_moments, heldout_bound
from ..engine._executor import ChunkExecutor, plan_chunks
from ..expectations import psi_statistics
from ..optim._alternating import local_step
from ..variational._kl import gaussian_kl

__all__ = ["heldout_scores", "infer_latents", "latents_for", "uncertain_moments"]

#: Largest block of the new-rows × reference-rows distance matrix of ``transform`` (32 MiB).
_DISTANCE_BLOCK = 2 ** 22


def _nearest_rows(Y, refs):
    """Index of the nearest row of ``refs`` for each row of ``Y``, in blocks of ``Y``'s rows."""
    rows = max(1, _DISTANCE_BLOCK // max(1, refs.shape[0]))
    ref_sq = np.sum(refs ** 2, axis=1)[None, :]
    nearest = np.empty(Y.shape[0], dtype=np.intp)
    for a in range(0, Y.shape[0], rows):
        block = Y[a:a + rows]
        d2 = np.sum(block ** 2, axis=1)[:, None] - 2.0 * block @ refs.T + ref_sq
        nearest[a:a + rows] = np.argmin(d2, axis=1)
    return nearest


#: Rows per block of the Ψ-statistics in ``score_samples`` and ``predict_uncertain``.


def infer_latents(est, Ystar):
    """Optimise q(x*) of unseen centred rows with the model fixed; returns (mu, S)."""
    n, Q = Ystar.shape[0], est.n_components
    if est._Y is not None:  # start from the nearest training row's q(x)
        refs, ref_mu, ref_S = est._Y, est.latent_mean_, est.latent_variance_
    else:  # a Dask fit keeps no rows: start from the inducing input with the nearest image
        ref_mu = est.inducing_inputs_
        refs = est._normalized(est.inverse_transform(ref_mu))
        ref_S = np.full_like(ref_mu, float(est.latent_variance_init))
    nearest = _nearest_rows(Ystar, refs)
    mu0 = ref_mu[nearest]
    S0 = ref_S[nearest]
    rule = est._rule_shared()
    Z = est.inducing_inputs_
    work, _, cap = psi_row_cost(rule, Z.shape[0], Q)
    mu, S = np.empty((n, Q)), np.empty((n, Q))
    status = np.empty(n, dtype=np.intp)
    name = f"{type(est).__name__}.transform"

    def chunk(i, a, b):  # each row is its own problem (model fixed): chunks only share work
        mu[a:b], S[a:b], _, status[a:b] = local_step(
            est.kernel_, Z, rule_rows(rule, a, b), est._post, mu0[a:b], S0[a:b],
            Ystar[a:b], max_iter=est.transform_max_iter, tol=est.tol,
            verbose=est.verbose, name=name)
        return 0.0

    ChunkExecutor().map_reduce(chunk, plan_chunks(n, work, max_rows=cap))
    if np.any(status != 0):
        stalled = int(np.sum(status == 2))
        detail = (f" ({stalled} of them stopped where their line search found no decrease)"
                  if stalled else "")
        warn(f"{name}: L-BFGS did not converge for {int(np.sum(status != 0))} of {n} rows "
             f"within transform_max_iter={est.transform_max_iter} iterations{detail}. "
             "Increase transform_max_iter or loosen tol.", ConvergenceWarning)
    return mu, S


def latents_for(est, X):
    """Latent means/variances of validated rows: stored for training rows, inferred else."""
    idx = np.array([est._row_index.get(row.tobytes(), -1) for row in X], dtype=np.intp)
    mu = np.empty((X.shape[0], est.n_components))
    S = np.empty_like(mu)
    seen = idx >= 0
    mu[seen] = est.latent_mean_[idx[seen]]
    S[seen] = est.latent_variance_[idx[seen]]
    if np.any(~seen):
        with threads(est.n_jobs):
            new = est._normalized(X[~seen])
            check_data_scale("X (normalised with the training statistics)", new,
                             spread=False)
            mu[~seen], S[~seen] = infer_latents(est, new)
    return mu, S


def heldout_scores(est, X, mu, S):
    """Per-row held-out bound (KL included) of validated rows ``X`` at their ``q(x*)``, as a
    density of ``X`` (the normalisation's log-Jacobian subtracted)."""
    Ystar = est._normalized(X)
    rule = est._rule_shared()
    out = np.empty(X.shape[0])
    with threads(est.n_jobs):
        for rows in row_blocks(X.shape[0], 1, PREDICT_CHUNK_ROWS):
            a, b = rows.start, rows.stop
            stats, _ = psi_statistics(est.kernel_, est.inducing_inputs_, mu[a:b], S[a:b],
                                      rule, per_point=True)
            values, _ = heldout_bound(Ystar[a:b], stats.psi0, stats.Psi1, stats.Psi2,
                                      est._post)
            out[a:b] = values - gaussian_kl(mu[a:b], S[a:b], per_row=True)
    return out - np.sum(np.log(est.X_scale_))  # density of X, not of the normalised rows


def uncertain_moments(est, mean, var, full_cov, include_noise):
    """Data-space predictive mean and (co)variance at Gaussian latent inputs
    ``N(mean, diag var)`` (Girard et al. 2003), in original units."""
    rule = est._rule_shared()
    with threads(est.n_jobs):
        m, v = chunked_predictive_moments(
            est._post, lambda a, b: psi_statistics(est.kernel_, est.inducing_inputs_, mean[a:b],
                                                   var[a:b], rule, per_point=True)[0],
            mean.shape[0], full_cov=full_cov)
    m = m * est.X_scale_ + est.X_mean_
    if include_noise:
        if full_cov:
            D = v.shape[1]
            v[:, np.arange(D), np.arange(D)] += est.noise_variance_
        else:
            v = v + est.noise_variance_
    if full_cov:
        return m, v * np.outer(est.X_scale_, est.X_scale_)
    return m, v * est.X_scale_ ** 2
