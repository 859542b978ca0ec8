"""Early stopping of :class:`~sklearn_lvgp.UnscentedGPLVM`'s Adam path on held-out rows.

The held-out rows have no latent parameters during the fit. Every ``validation_every`` Adam
steps their ``q(x*)`` is inferred with the current model held fixed (as ``transform`` does) and
scored by their per-row held-out bound, a lower bound on the log density of the rows
(Titsias & Lawrence 2010, §3.2; :meth:`~sklearn_lvgp.UnscentedGPLVM.score_samples`). After the
fit the held-out rows' ``q(x*)`` are inferred once more, so the fitted latents cover every row.
"""

import copy
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.progress import fit_progress
from ..expectations import monte_carlo_rule
from ._unscented_gplvm_predict import heldout_scores, infer_latents

__all__ = ["fill_held_out_rows", "held_out_score"]


def _state_at(est, p, kernel, Y_train, rule, jitter):
    """A copy of ``est`` holding the model of parameters ``p`` fitted on ``Y_train``."""
    tmp = copy.copy(est)
    kernel = kernel.clone()
    kernel.theta = p["theta"]
    tmp.kernel_, tmp.latent_mean_, tmp.latent_variance_ = kernel, p["mu"], p["S"]
    tmp.inducing_inputs_, tmp.noise_variance_ = p["Z"], float(p["noise"])
    tmp._rule, tmp._jitter, tmp._Y, tmp._transform_seed = rule, jitter, Y_train, 0
    tmp._finalise(Y_train)
    return tmp


def held_out_score(est, packer, kernel, Y_train, X_val, rule, stochastic, jitter):
    """``score(flat)``: the mean held-out bound of the raw rows ``X_val`` (a density of X) under
    the model of ``flat``; Monte Carlo rules are frozen at one draw."""
    if stochastic:
        rule = monte_carlo_rule(est.n_samples, est.n_components, np.random.RandomState(0))

    def score(flat):
        with fit_progress(est, None), warnings.catch_warnings():
            # the inner inference is a fixed budget, and no iteration of the fit's callback
            warnings.simplefilter("ignore", ConvergenceWarning)
            tmp = _state_at(est, packer.unpack(flat), kernel, Y_train, rule, jitter)
            mu, S = infer_latents(tmp, tmp._normalized(X_val))
            return float(np.mean(heldout_scores(tmp, X_val, mu, S)))

    return score


def fill_held_out_rows(est, X, Y, train, held_out):
    """After the fit on rows ``train``: infer ``q(x*)`` of the ``held_out`` rows with the final
    model and store the latents, the normalised rows and the row index of all of ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mu_v, S_v = infer_latents(est, Y[held_out])
    mu = np.empty((X.shape[0], est.n_components))
    S = np.empty_like(mu)
    mu[train], S[train] = est.latent_mean_, est.latent_variance_
    mu[held_out], S[held_out] = mu_v, S_v
    est.latent_mean_, est.latent_variance_ = mu, S
    est._Y = Y
    est._row_index = {row.tobytes(): i for i, row in enumerate(X)}
