"""The in-memory fit of :class:`~sklearn_lvgp.UnscentedGPLVM` (de Souza et al. 2021).

Normalisation, the optional early-stopping split (:mod:`._gplvm_early_stopping`), the
initial model (:mod:`._gplvm_setup`), the joint or alternating optimisation of the collapsed
bound with its Ψ-statistics (Titsias & Lawrence 2010) and the fitted attributes.
"""

from types import SimpleNamespace

import numpy as np
from sklearn.utils import check_random_state

from .._core.pairwise import PairwiseRows
from .._core.scaling import (
    column_scales,
    normalization,
    pairwise_column_moments,
    pairwise_column_variances,
    pairwise_normalization,
)
from .._core.validation import check_data_scale
from ..bounds._collapsed import CollapsedPsiBound
from ..expectations import monte_carlo_rule
from ..optim._alternating import InMemoryLocals
from ._unscented_gplvm_early_stopping import fill_held_out_rows, held_out_score
from ._unscented_gplvm_setup import (
    alternates,
    initial_model,
    joint_objective,
    joint_packer,
    optimise_joint,
    previous_solution,
    run_alternating,
    warm_start_key,
    warn_if_not_ard,
)

__all__ = ["fit_in_memory"]


def fit_in_memory(est, X, random_state):
    """Fit ``est`` on the validated numpy rows ``X``; returns ``est``."""
    Q = est.n_components
    continuing = est._continues_fit(warm_start_key(est, X))
    pairwise = alternates(est, X.shape[0])  # defaults summed as a Dask fit sums them
    if not continuing:
        est.X_mean_, est.X_scale_ = (
            pairwise_normalization(PairwiseRows(X), est.normalize_X) if pairwise
            else normalization(X, est.normalize_X))
    Y_all = est._normalized(X)
    check_data_scale("X (after normalize_X)", Y_all)
    train, held_out = est._held_out_rows(X.shape[0], random_state)
    Y = Y_all if train is None else Y_all[train]
    N, D = Y.shape
    mu0 = est._initial_means(Y, Q, random_state)
    var_y = float(np.mean(pairwise_column_variances(PairwiseRows(Y))[1] if pairwise
                          else np.var(Y, axis=0)))
    scales = (None if est._kernel is not None
              else pairwise_column_moments(PairwiseRows(mu0))[1] if pairwise
              else column_scales(mu0))
    kernel, name, rule, optimizer, Z0, noise0, jitter, var_y = initial_model(est, mu0, scales,
                                                                             var_y, random_state)
    stochastic = name == "monte_carlo"
    S0 = np.full((N, Q), float(est.latent_variance_init))
    if continuing:
        mu0, S0, Z0, kernel, noise0, jitter = previous_solution(est, train)

    packer = joint_packer(N, Q, Z0, kernel)
    x0 = packer.pack({"mu": mu0, "S": S0, "Z": Z0, "theta": kernel.theta, "noise": noise0})
    work = kernel.clone()
    mc_state = check_random_state(random_state.randint(np.iinfo(np.int32).max))
    bound = CollapsedPsiBound(Y)  # chunked map-reduce; keeps its buffers across evaluations
    objective = joint_objective(est, packer, work, Y, rule, jitter, bound, mc_state,
                                stochastic)
    if optimizer == "alternating":
        out, g = run_alternating(est, InMemoryLocals(bound, mu0.copy(), S0.copy()), work,
                                       Z0, noise0, rule, jitter, var_y)
        res = SimpleNamespace(x=packer.pack({"mu": out.mu, "S": out.S, **g}),
                              n_iter=out.n_rounds, history=-out.history)
    else:
        score = None if train is None else held_out_score(
            est, packer, work, Y, X[held_out], rule, stochastic, jitter)
        res = optimise_joint(est, optimizer, objective, x0, packer, work, var_y, score)
    p = packer.unpack(res.x)
    work.theta = p["theta"]
    est.kernel_ = work
    est.latent_mean_ = p["mu"]
    est.latent_variance_ = p["S"]
    est.inducing_inputs_ = p["Z"]
    est.noise_variance_ = float(p["noise"])
    est.expectation_ = name
    est.optimizer_ = optimizer
    est.n_iter_ = res.n_iter + (est.n_iter_ if continuing else 0)
    est.elbo_history_ = np.concatenate([est.elbo_history_ if continuing else [],
                                         -np.asarray(res.history)])
    est.relevance_ = work.relevance(Q)
    warn_if_not_ard(est)
    est._jitter = jitter
    # deterministic rule for prediction and the final posterior (MC: one frozen draw)
    est._rule = (monte_carlo_rule(est.n_samples, Q, mc_state) if stochastic else rule)
    est._Y = Y
    est._row_index = {row.tobytes(): i for i, row in enumerate(X)}
    est._transform_seed = int(random_state.randint(np.iinfo(np.int32).max))
    est.validation_scores_ = getattr(res, "validation_history", None)
    est._finalise(Y, bound)
    if train is not None:
        fill_held_out_rows(est, X, Y_all, train, held_out)
    return est
