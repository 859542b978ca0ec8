"""Small problems for every likelihood, with independent reference densities.

A case is ``(id, factory, make_data)``: ``factory()`` builds a fresh likelihood, ``make_data(rng)``
returns ``(y, mu, var)``. ``log_lik(lik, y, f)`` is ``log p(y | f)`` for samples ``f`` of shape
``mu.shape + (S,)`` (elementwise) or ``(N, S, K)`` (multiclass), written from the textbook
densities with scipy's special functions (scipy.stats' own ``logpdf`` is far slower on 10^6
draws), not from the package's code.
"""

import numpy as np
from scipy.special import expit, gammaln, log_expit, log_ndtr, logsumexp, ndtr

from sklearn_lvgp.likelihoods import (
    Bernoulli,
    Beta,
    Gaussian,
    Ordinal,
    Poisson,
    RobustMax,
    Softmax,
    StudentT,
)

N, D, K = 3, 2, 3


def _marginals(rng, shape=(N, D)):
    return rng.normal(0.0, 0.8, shape), rng.uniform(0.2, 1.2, shape)


def _real(rng):
    mu, var = _marginals(rng)
    return mu + rng.normal(0.0, 1.0, mu.shape), mu, var


def _binary(rng):
    mu, var = _marginals(rng)
    return (rng.random(mu.shape) < 0.5).astype(float), mu, var


def _unit(rng):
    mu, var = _marginals(rng)
    return rng.uniform(0.05, 0.95, mu.shape), mu, var


def _counts(rng):
    mu, var = _marginals(rng)
    return rng.integers(0, 5, mu.shape).astype(float), mu, var


def _ordinal(rng):
    mu, var = _marginals(rng)
    return rng.integers(0, 4, mu.shape), mu, var


def _multiclass(rng):
    mu, var = _marginals(rng, (N, K))
    return rng.integers(0, K, N), mu, var


CASES = [
    ("gaussian", lambda: Gaussian(noise_variance=0.3), _real),
    ("gaussian_per_output", lambda: Gaussian(noise_variance=np.array([0.3, 0.8])), _real),
    ("student_t", lambda: StudentT(df=4.0, scale=0.7), _real),
    ("student_t_learned_df", lambda: StudentT(df=3.5, scale=0.7, df_bounds=(1.0, 100.0)), _real),
    ("bernoulli_probit", lambda: Bernoulli(link="probit"), _binary),
    ("bernoulli_logit", lambda: Bernoulli(link="logit"), _binary),
    ("beta_probit", lambda: Beta(scale=4.0, link="probit"), _unit),
    ("beta_logit", lambda: Beta(scale=4.0, link="logit"), _unit),
    ("ordinal", lambda: Ordinal(bin_edges=np.array([-1.0, 0.2, 1.1]), scale=0.6), _ordinal),
    ("ordinal_fixed_edges",
     lambda: Ordinal(bin_edges=np.array([-1.0, 0.2, 1.1]), scale=0.6, bin_edges_bounds="fixed"),
     _ordinal),
    ("poisson", lambda: Poisson(), _counts),
    ("softmax", lambda: Softmax(), _multiclass),
    ("robust_max", lambda: RobustMax(epsilon=0.05), _multiclass),
    ("robust_max_learned_epsilon",
     lambda: RobustMax(epsilon=0.05, epsilon_bounds=(1e-6, 0.5)), _multiclass),
]
IDS = [c[0] for c in CASES]


def _ordinal_z(lik, f):
    """``(b - f) / scale`` at the edges ``b`` with ``-inf`` and ``inf`` at the ends (last axis)."""
    edges = np.concatenate([[-np.inf], np.asarray(lik.bin_edges, float), [np.inf]])
    return (edges - f[..., None]) / lik.scale


def _bin_proba(lo, hi):
    """``Phi(hi) - Phi(lo)`` as a difference of lower tails below the median, of upper tails
    above it (no cancellation to zero)."""
    s = np.where(lo + hi > 0, -1.0, 1.0)
    return s * (ndtr(s * hi) - ndtr(s * lo))


def _ordinal_proba(lik, f):
    """Class probabilities at ``f`` (any shape), last axis the class."""
    z = _ordinal_z(lik, f)
    return _bin_proba(z[..., :-1], z[..., 1:])


def log_lik(lik, y, f):
    """Reference ``log p(y | f)``; ``f`` has a sample axis after ``y``'s axes (elementwise) or
    shape ``(N, S, K)`` (multiclass)."""
    yy = y[..., None] if not lik.is_multiclass else y
    if isinstance(lik, Gaussian):
        s2 = np.asarray(lik.noise_variance, float)
        s2 = s2[:, None] if s2.ndim else s2
        return -0.5 * np.log(2 * np.pi * s2) - 0.5 * (yy - f) ** 2 / s2
    if isinstance(lik, StudentT):
        nu, s = lik.df, lik.scale
        return (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi * s * s)
                - (nu + 1) / 2 * np.log1p((yy - f) ** 2 / (nu * s * s)))
    if isinstance(lik, Bernoulli):
        t = (2 * yy - 1) * f
        return log_ndtr(t) if lik.link == "probit" else log_expit(t)
    if isinstance(lik, Beta):
        m = ndtr(f) if lik.link == "probit" else expit(f)
        a, b = lik.scale * m, lik.scale * (1 - m)
        return (gammaln(lik.scale) - gammaln(a) - gammaln(b) + (a - 1) * np.log(yy)
                + (b - 1) * np.log1p(-yy))
    if isinstance(lik, Ordinal):
        edges = np.concatenate([[-np.inf], np.asarray(lik.bin_edges, float), [np.inf]])
        return np.log(_bin_proba((edges[yy] - f) / lik.scale, (edges[yy + 1] - f) / lik.scale))
    if isinstance(lik, Poisson):
        return yy * f - np.exp(f) - gammaln(yy + 1)
    idx = np.broadcast_to(y[:, None, None], f.shape[:2] + (1,))
    if isinstance(lik, Softmax):
        return np.take_along_axis(f, idx, -1)[..., 0] - logsumexp(f, axis=-1)
    hit = np.argmax(f, axis=-1) == y[:, None]
    Kc = f.shape[-1]
    return np.where(hit, np.log1p(-lik.epsilon), np.log(lik.epsilon / (Kc - 1)))


def conditional_moments(lik, f):
    """``(E[y | f], Var[y | f])`` at samples ``f`` (regression likelihoods and Bernoulli)."""
    if isinstance(lik, Gaussian):
        s2 = np.asarray(lik.noise_variance, float)
        return f, np.broadcast_to(s2[:, None] if s2.ndim else s2, f.shape)
    if isinstance(lik, StudentT):
        return f, np.full(f.shape, lik.scale ** 2 * lik.df / (lik.df - 2))
    if isinstance(lik, Bernoulli):
        p = ndtr(f) if lik.link == "probit" else expit(f)
        return p, p * (1 - p)
    if isinstance(lik, Beta):
        m = ndtr(f) if lik.link == "probit" else expit(f)
        return m, m * (1 - m) / (lik.scale + 1)
    if isinstance(lik, Ordinal):
        # E[r] = sum_i P(r > i) and E[r^2] = sum_i (2i + 1) P(r > i), P(r > i) = Phi((f - b_i)/s)
        mean, second = 0.0, 0.0
        for i, b in enumerate(np.asarray(lik.bin_edges, float)):
            exceed = ndtr((f - b) / lik.scale)
            mean = mean + exceed
            second = second + (2 * i + 1) * exceed
        return mean, second - mean ** 2
    rate = np.exp(f)
    return rate, rate


def class_proba(lik, f):
    """Class probabilities at samples ``f``: ``(N, S, n_classes)``."""
    if isinstance(lik, Bernoulli):
        p = (ndtr(f) if lik.link == "probit" else expit(f))[:, 0, :]
        return np.stack([1 - p, p], axis=-1)
    if isinstance(lik, Ordinal):
        return _ordinal_proba(lik, f[:, 0, :])
    if isinstance(lik, Softmax):
        return np.exp(f - logsumexp(f, axis=-1, keepdims=True))
    Kc = f.shape[-1]
    hit = np.arange(Kc) == np.argmax(f, axis=-1)[..., None]
    return np.where(hit, 1 - lik.epsilon, lik.epsilon / (Kc - 1))


def draw_f(lik, mu, var, n_samples, rng):
    """``n_samples`` draws of ``f ~ N(mu, var)``: ``mu.shape + (S,)`` elementwise, ``(N, S, K)``
    for multiclass likelihoods."""
    if lik.is_multiclass:
        return mu[:, None, :] + np.sqrt(var)[:, None, :] * rng.standard_normal(
            (mu.shape[0], n_samples, mu.shape[1]))
    return mu[..., None] + np.sqrt(var)[..., None] * rng.standard_normal(mu.shape + (n_samples,))
