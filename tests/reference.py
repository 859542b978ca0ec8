"""Naive pure-numpy references shared by the tests.

Nothing here imports the library's numerical code: kernels are re-written from their formulas,
kernel matrices are double loops, and Ψ-statistics are brute-force expectations (a tensor
Gauss–Hermite grid or plain Monte Carlo). Slow on purpose; use tiny problems.

Conventions: ``mu``, ``S`` are ``(N, Q)`` means and variances of ``q(x_n) = N(mu_n, diag(S_n))``,
``Z`` is ``(M, Q)``; a *pointwise kernel* is a function ``k(x, z)`` on arrays whose last axis is
``Q`` and that broadcasts over the leading axes (``k(x[:, None], z[None])`` is a matrix).
"""

import itertools

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

# ------------------------------------------------------------------------- pointwise kernels


def rbf_pointwise(x, z, length_scale=1.0, variance=1.0):
    """``variance * exp(-0.5 * sum_q (x_q - z_q)^2 / l_q^2)``, broadcasting over leading axes."""
    d = (np.asarray(x, dtype=float) - np.asarray(z, dtype=float)) / np.asarray(length_scale)
    return variance * np.exp(-0.5 * np.sum(d * d, axis=-1))


def linear_pointwise(x, z, variances=1.0):
    """``sum_q alpha_q x_q z_q``, broadcasting over leading axes."""
    return np.sum(np.asarray(variances) * np.asarray(x, dtype=float) * np.asarray(z, dtype=float),
                  axis=-1)


def pointwise_kernel(kernel):
    """A pointwise function equal to a library kernel, rebuilt from its hyperparameters.

    Supports ``RBF``, ``Linear`` and ``Sum``/``Product`` of those (by class name, so this module
    stays independent of the library's code).

    Parameters
    ----------
    kernel : Kernel
        Library kernel.

    Returns
    -------
    k : callable
        ``k(x, z)`` broadcasting over leading axes.
    """
    name = type(kernel).__name__
    if name == "RBF":
        ls = np.array(kernel.length_scale, dtype=float)
        var = float(kernel.variance)
        return lambda x, z: rbf_pointwise(x, z, ls, var)
    if name == "Linear":
        alpha = np.array(kernel.variances, dtype=float)
        return lambda x, z: linear_pointwise(x, z, alpha)
    if name == "Sum":
        k1, k2 = pointwise_kernel(kernel.k1), pointwise_kernel(kernel.k2)
        return lambda x, z: k1(x, z) + k2(x, z)
    if name == "Product":
        k1, k2 = pointwise_kernel(kernel.k1), pointwise_kernel(kernel.k2)
        return lambda x, z: k1(x, z) * k2(x, z)
    raise NotImplementedError(f"no pointwise reference for {name}")


def kernel_matrix_loop(k, X, Z=None):
    """Kernel matrix by an explicit double loop over rows.

    Parameters
    ----------
    k : callable
        Pointwise kernel ``k(x, z)`` on two ``(Q,)`` vectors.
    X : ndarray of shape (N, Q)
    Z : ndarray of shape (M, Q), default=None
        ``None`` means ``X``.

    Returns
    -------
    K : ndarray of shape (N, M)
    """
    Z = X if Z is None else Z
    K = np.empty((X.shape[0], Z.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Z.shape[0]):
            K[i, j] = k(X[i], Z[j])
    return K


# ----------------------------------------------------------------------- expectation rules


def gauss_hermite_grid(H, Q):
    """Tensor Gauss–Hermite rule for ``N(0, I_Q)`` with ``H`` nodes per dimension.

    Parameters
    ----------
    H : int
        Nodes per dimension.
    Q : int
        Dimension.

    Returns
    -------
    nodes : ndarray of shape (H**Q, Q)
        Unit-space nodes.
    weights : ndarray of shape (H**Q,)
        Weights normalised to sum to one.
    """
    x, w = hermegauss(H)
    w = w / w.sum()
    nodes = np.array(list(itertools.product(x, repeat=Q)))
    weights = np.prod(np.array(list(itertools.product(w, repeat=Q))), axis=1)
    return nodes, weights


def _points(mu_n, S_n, nodes):
    """Evaluation points ``x_k = mu_n + sqrt(S_n) * xi_k`` of one data point."""
    return mu_n + np.sqrt(S_n) * nodes


def psi_quadrature(k, Z, mu, S, nodes, weights, per_point=False):
    """Ψ-statistics of a pointwise kernel under a weighted point rule.

    Parameters
    ----------
    k : callable
        Pointwise kernel (see module docstring).
    Z, mu, S : ndarray
        Inducing inputs (M, Q), means and variances (N, Q).
    nodes : ndarray of shape (K, Q)
        Unit-space nodes.
    weights : ndarray of shape (K,)
        Weights (summing to one).
    per_point : bool, default=False
        Return Psi2 as ``(N, M, M)`` per-point summands.

    Returns
    -------
    psi0 : float
    Psi1 : ndarray of shape (N, M)
    Psi2 : ndarray of shape (M, M) or (N, M, M)
    """
    N, M = mu.shape[0], Z.shape[0]
    psi0 = 0.0
    Psi1 = np.empty((N, M))
    Psi2 = np.empty((N, M, M))
    for n in range(N):
        X = _points(mu[n], S[n], nodes)
        KX = k(X[:, None, :], Z[None, :, :])
        psi0 += weights @ k(X, X)
        Psi1[n] = weights @ KX
        Psi2[n] = KX.T @ (weights[:, None] * KX)
    return float(psi0), Psi1, Psi2 if per_point else Psi2.sum(axis=0)


def psi_gauss_hermite(k, Z, mu, S, H=20, per_point=False):
    """Ψ-statistics by a tensor Gauss–Hermite grid of ``H**Q`` points per data point.

    Parameters
    ----------
    k : callable
        Pointwise kernel.
    Z, mu, S : ndarray
        Inducing inputs (M, Q), means and variances (N, Q).
    H : int, default=20
        Nodes per dimension.
    per_point : bool, default=False
        Return Psi2 as ``(N, M, M)`` per-point summands.

    Returns
    -------
    psi0, Psi1, Psi2
        As :func:`psi_quadrature`.
    """
    nodes, weights = gauss_hermite_grid(H, mu.shape[1])
    return psi_quadrature(k, Z, mu, S, nodes, weights, per_point)


def cross_psi2_gauss_hermite(ka, kb, Z, mu, S, H=10, per_point=False):
    """``C_{mm'} = sum_n E[k_a(x_n, z_m) k_b(x_n, z_m')]`` by a tensor Gauss–Hermite grid.

    Parameters
    ----------
    ka, kb : callable
        Pointwise kernels.
    Z, mu, S : ndarray
        Inducing inputs (M, Q), means and variances (N, Q).
    H : int, default=10
        Nodes per dimension.
    per_point : bool, default=False
        Return ``(N, M, M)`` per-point summands.

    Returns
    -------
    C : ndarray of shape (M, M) or (N, M, M)
    """
    nodes, weights = gauss_hermite_grid(H, mu.shape[1])
    C = np.empty((mu.shape[0], Z.shape[0], Z.shape[0]))
    for n in range(mu.shape[0]):
        X = _points(mu[n], S[n], nodes)
        Ka = ka(X[:, None, :], Z[None, :, :])
        Kb = kb(X[:, None, :], Z[None, :, :])
        C[n] = Ka.T @ (weights[:, None] * Kb)
    return C if per_point else C.sum(axis=0)


def psi_monte_carlo(k, Z, mu, S, n_samples, rng, chunk=10000):
    """Monte-Carlo Ψ-statistics with standard errors.

    Parameters
    ----------
    k : callable
        Pointwise kernel.
    Z, mu, S : ndarray
        Inducing inputs (M, Q), means and variances (N, Q).
    n_samples : int
        Samples per data point.
    rng : numpy.random.Generator
        Source of the samples.
    chunk : int, default=10000
        Samples processed at once (memory ``chunk * M * M``).

    Returns
    -------
    estimates : tuple
        ``(psi0, Psi1 (N, M), Psi2 (M, M))``.
    std_errors : tuple
        Standard errors of the same shapes (independent across points, so variances add).
    """
    N, Q = mu.shape
    M = Z.shape[0]
    means = [np.zeros(()), np.zeros((N, M)), np.zeros((M, M))]
    variances = [np.zeros(()), np.zeros((N, M)), np.zeros((M, M))]
    for n in range(N):
        first = [np.zeros(()), np.zeros(M), np.zeros((M, M))]
        second = [np.zeros(()), np.zeros(M), np.zeros((M, M))]
        done = 0
        while done < n_samples:
            c = min(chunk, n_samples - done)
            X = _points(mu[n], S[n], rng.standard_normal((c, Q)))
            K1 = k(X[:, None, :], Z[None, :, :])
            for i, v in enumerate((k(X, X), K1, K1[:, :, None] * K1[:, None, :])):
                first[i] += v.sum(axis=0)
                second[i] += (v * v).sum(axis=0)
            done += c
        for i in range(3):
            m = first[i] / n_samples
            var = np.maximum(second[i] / n_samples - m * m, 0.0) / n_samples
            if i == 1:
                means[1][n] = m
                variances[1][n] = var
            else:
                means[i] += m
                variances[i] += var
    return ((float(means[0]), means[1], means[2]),
            (float(np.sqrt(variances[0])), np.sqrt(variances[1]), np.sqrt(variances[2])))


def diabetes_split(seed):
    """The deep GP reproduction's diabetes split: ``RandomState(seed)`` permutation, 90/10."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    perm = np.random.RandomState(seed).permutation(len(X))
    n = int(0.9 * len(X))
    return X[perm[:n]], y[perm[:n]], X[perm[n:]], y[perm[n:]]


def exact_gp_log_density(X, y, Xt, yt):
    """Held-out mean log density of scikit-learn's exact GP (constant x ARD-RBF + white, ML-II)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    mu, sd = X.mean(0), X.std(0)
    gp = GaussianProcessRegressor(ConstantKernel() * RBF(np.ones(X.shape[1])) + WhiteKernel(),
                                  normalize_y=True, random_state=0).fit((X - mu) / sd, y)
    m, s = gp.predict((Xt - mu) / sd, return_std=True)
    return float(np.mean(-0.5 * np.log(2 * np.pi * s ** 2) - 0.5 * (yt - m) ** 2 / s ** 2))


def checks_since_last_gain(scores, tol=1e-4):
    """Held-out checks after the last one that beat the best so far by more than ``tol``
    (relative): the early-stopping rule's count (``sklearn_lvgp.optim._adam.run_adam``)."""
    best, last = scores[0], 0
    for i, s in enumerate(scores[1:], start=1):
        if s > best + tol * max(1.0, abs(best)):
            best, last = s, i
    return len(scores) - 1 - last
