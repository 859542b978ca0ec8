"""SVGP layer engine: forward identities and every backward pass against finite differences.

Identities: whitened ≡ unwhitened marginals and KL, one γ = 1 natural-gradient step reaching the
Titsias (2009) optimum (Salimbeni 2020, §3.4.1) and its invariance to whitening; backward passes
of the layer, KL, Gaussian expectation, reparameterisation and natural-gradient algebra against
central finite differences.
"""

import numpy as np
import pytest
from scipy.special import log_ndtr

from sklearn_lvgp._core.linalg import cho_solve, solve_lower
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.expectations._rules import reparameterise, reparameterise_vjp
from sklearn_lvgp.kernels import RBF, Matern52, White
from sklearn_lvgp.likelihoods._bernoulli import (
    bernoulli_probit_expectation,
    bernoulli_probit_expectation_vjp,
)
from sklearn_lvgp.likelihoods._gaussian import (
    expected_log_gaussian,
    expected_log_gaussian_vjp,
    gaussian_expectation,
    gaussian_expectation_vjp,
)
from sklearn_lvgp.utils.gradcheck import check_vjp, fd_gradient
from sklearn_lvgp.variational import (
    IdentityMean,
    LinearMean,
    SVGPLayer,
    ZeroMean,
    expectation_gradients,
    gaussian_natgrad_step,
    kl_divergence,
    kl_divergence_vjp,
    layer_forward,
    layer_vjp,
    marginals_precision_adjoint,
    natgrad_step,
    pca_linear_mean,
    prior_factor,
)

M, P = 5, 7


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Tiny matrices: multi-threaded BLAS only adds overhead."""
    with threads(1):
        yield


def _layer_inputs(rng, d_in, d_out, whiten, kernel=None):
    Z = rng.standard_normal((M, d_in))
    H = rng.standard_normal((P, d_in))
    q_mu = rng.standard_normal((M, d_out))
    q_sqrt = np.tril(0.3 * rng.standard_normal((d_out, M, M)))
    q_sqrt[:, np.arange(M), np.arange(M)] = 0.5 + rng.random((d_out, M))
    kernel = kernel if kernel is not None else RBF(length_scale=1.0 + rng.random(d_in),
                                                   variance=1.3)
    return kernel, dict(Z=Z, H=H, q_mu=q_mu, q_sqrt=q_sqrt, theta=kernel.theta)


def _means(d_in, d_out, kind, rng):
    if kind == "zero":
        return ZeroMean(d_out)
    if kind == "identity":
        return IdentityMean()
    return LinearMean(rng.standard_normal((d_in, d_out)))


MEAN_CASES = [(2, 1, "zero"), (3, 3, "identity"), (3, 1, "linear"), (2, 3, "linear"),
              (2, 3, "zero")]


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("d_in,d_out,mean", MEAN_CASES)
def test_layer_vjp_matches_finite_differences(rng, whiten, d_in, d_out, mean):
    """Marginals + KL wrt q_mu, q_sqrt, Z, theta and the inputs H."""
    kernel, inputs = _layer_inputs(rng, d_in, d_out, whiten)
    mf = _means(d_in, d_out, mean, rng)

    def forward(Z, H, q_mu, q_sqrt, theta):
        layer = SVGPLayer(kernel.clone_with_theta(theta), Z, q_mu, np.tril(q_sqrt), mf, whiten)
        mu, var, kl, _ = layer_forward(layer, H, jitter=1e-6)
        return mu, var, np.array(kl)

    def backward(weights, Z, H, q_mu, q_sqrt, theta):
        layer = SVGPLayer(kernel.clone_with_theta(theta), Z, q_mu, np.tril(q_sqrt), mf, whiten)
        _, _, _, cache = layer_forward(layer, H, jitter=1e-6)
        g = layer_vjp(weights[0], weights[1], float(weights[2]), cache)
        return dict(Z=g.Z, H=g.H, q_mu=g.q_mu, q_sqrt=g.q_sqrt, theta=g.theta)

    check_vjp(forward, backward, inputs, rng, rtol=1e-6)


@pytest.mark.parametrize("whiten", [True, False])
def test_layer_vjp_other_kernel_and_large_jitter(rng, whiten):
    """Matérn-5/2 plus white noise, with a jitter large enough that its Kuu-dependence shows."""
    kernel = Matern52(length_scale=np.array([0.8, 1.7]), variance=0.9) + White(noise_level=0.1)
    kernel, inputs = _layer_inputs(rng, 2, 2, whiten, kernel=kernel)

    def forward(Z, H, q_mu, q_sqrt, theta):
        layer = SVGPLayer(kernel.clone_with_theta(theta), Z, q_mu, np.tril(q_sqrt), None, whiten)
        mu, var, kl, _ = layer_forward(layer, H, jitter=1e-2)
        return mu, var, np.array(kl)

    def backward(weights, Z, H, q_mu, q_sqrt, theta):
        layer = SVGPLayer(kernel.clone_with_theta(theta), Z, q_mu, np.tril(q_sqrt), None, whiten)
        _, _, _, cache = layer_forward(layer, H, jitter=1e-2)
        g = layer_vjp(weights[0], weights[1], float(weights[2]), cache)
        return dict(Z=g.Z, H=g.H, q_mu=g.q_mu, q_sqrt=g.q_sqrt, theta=g.theta)

    check_vjp(forward, backward, inputs, rng, rtol=1e-6)


def test_kl_vjp_unwhitened_wrt_kuu(rng):
    """The KL adjoint of Kuu, perturbing Kuu symmetrically."""
    _, inputs = _layer_inputs(rng, 2, 3, False)
    B = rng.standard_normal((M, M))
    Kuu = B @ B.T + M * np.eye(M)
    E = rng.standard_normal((M, M))
    E = 0.5 * (E + E.T)

    def kl_of(K):
        return kl_divergence(inputs["q_mu"], inputs["q_sqrt"], np.linalg.cholesky(K), False)[0]

    _, cache = kl_divergence(inputs["q_mu"], inputs["q_sqrt"], np.linalg.cholesky(Kuu), False)
    g = kl_divergence_vjp(1.0, cache)
    h = 1e-6
    num = (kl_of(Kuu + h * E) - kl_of(Kuu - h * E)) / (2 * h)
    assert np.isclose(np.sum(g.Kuu * E), num, rtol=1e-7)
    assert np.allclose(g.Kuu, g.Kuu.T)


def test_kl_is_zero_at_the_prior(rng):
    _, inputs = _layer_inputs(rng, 2, 2, False)
    B = rng.standard_normal((M, M))
    Lu = np.linalg.cholesky(B @ B.T + np.eye(M))
    q_sqrt = np.stack([Lu, -Lu])  # the sign of a column of L does not matter
    assert abs(kl_divergence(np.zeros((M, 2)), q_sqrt, Lu, False)[0]) < 1e-10
    assert abs(kl_divergence(np.zeros((M, 2)), np.stack([np.eye(M)] * 2), None, True)[0]) < 1e-12


@pytest.mark.parametrize("d_out", [1, 3])
def test_whitened_equals_unwhitened(rng, d_out):
    """Whitened ≡ unwhitened: m_u = L_u m_v, L^(u) = L_u L^(v) leaves marginals and KL unchanged."""
    kernel, p = _layer_inputs(rng, 2, d_out, True)
    prior = prior_factor(kernel, p["Z"], 1e-6)
    Lu = prior.Lu
    white = SVGPLayer(kernel, p["Z"], p["q_mu"], p["q_sqrt"], None, True)
    unwhite = SVGPLayer(kernel, p["Z"], Lu @ p["q_mu"], np.einsum("ij,djk->dik", Lu, p["q_sqrt"]),
                        None, False)
    mu_w, var_w, kl_w, _ = layer_forward(white, p["H"])
    mu_u, var_u, kl_u, _ = layer_forward(unwhite, p["H"])
    np.testing.assert_allclose(mu_w, mu_u, atol=1e-8)
    np.testing.assert_allclose(var_w, var_u, atol=1e-8)
    assert abs(kl_w - kl_u) < 1e-8


def test_marginals_match_dense_conditional(rng):
    """Marginals equal the dense formula K_fu Kuu^-1 m and K_ff - Q_ff + A^T S A (unwhitened)."""
    kernel, p = _layer_inputs(rng, 2, 1, False)
    layer = SVGPLayer(kernel, p["Z"], p["q_mu"], p["q_sqrt"], None, False)
    mu, var, _, cache = layer_forward(layer, p["H"], jitter=1e-6)
    Kuu = cache[1].Kuu
    Kuf = kernel.K(p["Z"], p["H"])
    Kff = kernel.K(p["H"])
    Ai = np.linalg.solve(Kuu, Kuf)
    S = p["q_sqrt"][0] @ p["q_sqrt"][0].T
    np.testing.assert_allclose(mu[:, 0], Ai.T @ p["q_mu"][:, 0], rtol=1e-9)
    cov = Kff - Kuf.T @ Ai + Ai.T @ S @ Ai
    np.testing.assert_allclose(var[:, 0], np.diag(cov), rtol=1e-8)


def test_gaussian_expectation_vjp(rng):
    """VJP of the Gaussian variational expectation (w.r.t. mean, variance and noise)."""
    y = rng.standard_normal((6, 2))
    inputs = dict(mu=rng.standard_normal((6, 2)), var=rng.random((6, 2)),
                  noise=np.array(0.3))

    def forward(mu, var, noise):
        return gaussian_expectation(y, mu, var, float(noise))

    def backward(w, mu, var, noise):
        g = gaussian_expectation_vjp(w, y, mu, var, float(noise))
        return dict(mu=g.mu, var=g.var, noise=np.array(g.noise_variance))

    check_vjp(forward, backward, inputs, rng, rtol=1e-7)


@pytest.mark.parametrize("n_dims", [1, 3])
def test_expected_log_gaussian_vjp(rng, n_dims):
    """The Gaussian expectation from the expected squared residual (w.r.t. it and the noise)."""
    inputs = dict(sq=rng.random(5) * n_dims, noise=np.array(0.3))

    def backward(w, sq, noise):
        dsq, dnoise = expected_log_gaussian_vjp(w, n_dims, sq, float(noise))
        return dict(sq=dsq, noise=np.array(np.sum(dnoise)))

    check_vjp(lambda sq, noise: expected_log_gaussian(sq, n_dims, float(noise)), backward,
              inputs, rng, rtol=1e-7)


def test_gaussian_expectation_equals_monte_carlo(rng):
    y, mu, var, s2 = 0.4, -0.2, 0.5, 0.1
    f = mu + np.sqrt(var) * rng.standard_normal(400_000)
    mc = np.mean(-0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - f) ** 2 / s2)
    assert abs(gaussian_expectation(y, mu, var, s2) - mc) < 0.01


def test_bernoulli_expectation_value_and_vjp(rng):
    y = (rng.random((5, 2)) > 0.5).astype(float)
    mu = 2.0 * rng.standard_normal((5, 2))
    var = 0.1 + rng.random((5, 2))
    val, _ = bernoulli_probit_expectation(y, mu, var)
    # reference: a dense 400-point trapezoid over +-10 sd
    t = np.linspace(-10, 10, 4001)
    dens = np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)
    s = 2 * y - 1
    ref = np.trapezoid(log_ndtr(s[..., None] * (mu[..., None] + np.sqrt(var)[..., None] * t))
                       * dens, t, axis=-1)
    np.testing.assert_allclose(val, ref, rtol=1e-6, atol=1e-8)
    # zero variance: exactly log Phi(s mu)
    v0, _ = bernoulli_probit_expectation(y, mu, np.zeros_like(mu))
    np.testing.assert_allclose(v0, log_ndtr(s * mu), rtol=1e-12)

    def forward(mu, var):
        return bernoulli_probit_expectation(y, mu, var)[0]

    def backward(w, mu, var):
        _, cache = bernoulli_probit_expectation(y, mu, var)
        dmu, dvar = bernoulli_probit_expectation_vjp(w, cache)
        return dict(mu=dmu, var=dvar)

    check_vjp(forward, backward, dict(mu=mu, var=var), rng, rtol=1e-6)


def test_reparameterisation_vjp(rng):
    """VJP of the reparameterisation h = mu + eps sqrt(v + delta) (Salimbeni 2020, eq. 2.12)."""
    eps = rng.standard_normal((4, 3))
    delta = 1e-6

    def forward(mu, v):
        return reparameterise(mu, np.sqrt(v + delta), eps)

    def backward(w, mu, v):
        dmu, dv = reparameterise_vjp(w, eps, np.sqrt(v + delta))
        return dict(mu=dmu, v=dv)

    check_vjp(forward, backward, dict(mu=rng.standard_normal((4, 3)), v=rng.random((4, 3))),
              rng, rtol=1e-7)


def test_pca_linear_mean_widths(rng):
    X = rng.standard_normal((20, 4)) @ np.diag([3.0, 2.0, 1.0, 0.1])
    W = pca_linear_mean(X, 2).W
    assert W.shape == (4, 2)
    np.testing.assert_allclose(W.T @ W, np.eye(2), atol=1e-12)
    assert abs(abs(W[0, 0]) - 1.0) < 0.2  # leading direction is the first axis
    np.testing.assert_array_equal(pca_linear_mean(X, 6).W, np.hstack([np.eye(4),
                                                                       np.zeros((4, 2))]))


# ------------------------------------------------------------------------ natural gradients
def _one_layer_problem(rng, whiten, N=12, d_out=1):
    kernel = RBF(length_scale=np.array([0.9, 1.4]), variance=1.2)
    X = rng.standard_normal((N, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.standard_normal((N, d_out))
    Z = X[:M] + 0.01
    q_mu = rng.standard_normal((M, d_out))
    q_sqrt = np.tril(0.3 * rng.standard_normal((d_out, M, M)))
    q_sqrt[:, np.arange(M), np.arange(M)] = 0.5 + rng.random((d_out, M))
    return kernel, X, Y, Z, q_mu, q_sqrt


def _elbo(kernel, X, Y, Z, q_mu, q_sqrt, noise, whiten, jitter=1e-6):
    layer = SVGPLayer(kernel, Z, q_mu, q_sqrt, None, whiten)
    mu, var, kl, cache = layer_forward(layer, X, jitter)
    return float(np.sum(gaussian_expectation(Y, mu, var, noise))) - kl, cache


def _collapsed(kernel, X, Y, Z, noise, Kuu):
    Kuf = kernel.K(Z, X)
    Qff = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    C = Qff + noise * np.eye(X.shape[0])
    Lc = np.linalg.cholesky(C)
    a = solve_lower(Lc, Y)
    ll = -0.5 * np.sum(a * a) - Y.shape[1] * (np.sum(np.log(np.diag(Lc)))
                                              + 0.5 * X.shape[0] * np.log(2 * np.pi))
    return ll - Y.shape[1] * np.trace(kernel.K(X) - Qff) / (2 * noise)


@pytest.mark.parametrize("whiten", [True, False])
def test_natgrad_gamma_one_reaches_titsias_optimum(rng, whiten):
    """One γ = 1 step gives the collapsed bound (Titsias 2009); a second step changes nothing."""
    kernel, X, Y, Z, q_mu, q_sqrt = _one_layer_problem(rng, whiten, d_out=2)
    Y = np.column_stack([Y[:, 0], np.cos(X[:, 1])])
    noise = 0.05
    _, cache = _elbo(kernel, X, Y, Z, q_mu, q_sqrt, noise, whiten)
    prior, mcache = cache[1], cache[2]
    step = dict(point_weights=np.ones(X.shape[0]), noise_variance=noise, gamma=1.0,
                Kuu_chol=prior.Lu, whiten=whiten)
    m1, s1 = gaussian_natgrad_step(q_mu, q_sqrt, mcache.A, Y, **step)
    elbo1, _ = _elbo(kernel, X, Y, Z, m1, s1, noise, whiten)
    target = _collapsed(kernel, X, Y, Z, noise, prior.Kuu)
    assert abs(elbo1 - target) <= 1e-8 * abs(target)
    m2, s2 = gaussian_natgrad_step(m1, s1, mcache.A, Y, **step)
    elbo2, _ = _elbo(kernel, X, Y, Z, m2, s2, noise, whiten)
    assert abs(elbo2 - elbo1) <= 1e-10 * abs(elbo1)
    # and the optimum is a stationary point of the uncollapsed ELBO in q_mu
    g = fd_gradient(lambda m: _elbo(kernel, X, Y, Z, m, s1, noise, whiten)[0], m1)
    assert np.max(np.abs(g)) < 1e-5


@pytest.mark.parametrize("whiten", [True, False])
def test_closed_form_natgrad_equals_generic(rng, whiten):
    """The Gaussian-likelihood closed form equals the generic step from (dL/dm, dL/dS)."""
    kernel, X, Y, Z, q_mu, q_sqrt = _one_layer_problem(rng, whiten)
    noise, gamma = 0.1, 0.3
    w = np.full(X.shape[0], 1.7)  # minibatch scaling N / |B|
    layer = SVGPLayer(kernel, Z, q_mu, q_sqrt, None, whiten)
    mu, var, _, cache = layer_forward(layer, X)
    g = gaussian_expectation_vjp(w[:, None], Y, mu, var, noise)
    prior, mcache, kcache = cache[1], cache[2], cache[3]
    dm = mcache.A @ g.mu - kl_divergence_vjp(1.0, kcache).q_mu
    Sinv = np.stack([cho_solve(np.tril(q_sqrt[d]), np.eye(M)) for d in range(q_sqrt.shape[0])])
    prec_p = np.eye(M) if whiten else cho_solve(prior.Lu, np.eye(M))
    G = marginals_precision_adjoint(g.var, mcache) - 0.5 * (prec_p[None] - Sinv)
    generic = natgrad_step(q_mu, q_sqrt, dm, G, gamma)
    closed = gaussian_natgrad_step(q_mu, q_sqrt, mcache.A, Y, w, noise, gamma, prior.Lu, whiten)
    np.testing.assert_allclose(generic[0], closed[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(generic[1] @ np.swapaxes(generic[1], 1, 2),
                               closed[1] @ np.swapaxes(closed[1], 1, 2), rtol=1e-8, atol=1e-10)


def test_expectation_gradients_match_finite_differences(rng):
    """Natural-gradient algebra: dL/deta from (dL/dm, dL/dS) against FD of L(m(eta), S(eta))."""
    kernel, X, Y, Z, q_mu, q_sqrt = _one_layer_problem(rng, True)
    noise = 0.1
    L0 = np.tril(q_sqrt[0])
    eta1 = q_mu[:, 0].copy()
    eta2 = L0 @ L0.T + np.outer(eta1, eta1)

    def elbo_eta(e1, e2):
        S = e2 - np.outer(e1, e1)
        return _elbo(kernel, X, Y, Z, e1[:, None], np.linalg.cholesky(S)[None], noise, True)[0]

    layer = SVGPLayer(kernel, Z, q_mu, q_sqrt, None, True)
    mu, var, _, cache = layer_forward(layer, X)
    g = gaussian_expectation_vjp(1.0, Y, mu, var, noise)
    Sinv = cho_solve(L0, np.eye(M))
    dm = cache[2].A @ g.mu - q_mu
    G = marginals_precision_adjoint(g.var, cache[2]) - 0.5 * (np.eye(M) - Sinv)[None]
    d1, d2 = expectation_gradients(q_mu, dm, G)
    num1 = fd_gradient(lambda e: elbo_eta(e, eta2), eta1)
    np.testing.assert_allclose(d1[:, 0], num1, rtol=1e-6, atol=1e-8)
    E = rng.standard_normal((M, M))
    E = 0.5 * (E + E.T)
    h = 1e-6
    num2 = (elbo_eta(eta1, eta2 + h * E) - elbo_eta(eta1, eta2 - h * E)) / (2 * h)
    assert np.isclose(np.sum(d2[0] * E), num2, rtol=1e-6)


def test_natgrad_invariant_to_whitening(rng):
    """One natural-gradient step gives the same q(u) in both parameterisations."""
    kernel, X, Y, Z, q_mu, q_sqrt = _one_layer_problem(rng, True)
    noise, gamma = 0.1, 0.4
    prior = prior_factor(kernel, Z, 1e-6)
    Lu = prior.Lu
    w_layer = SVGPLayer(kernel, Z, q_mu, q_sqrt, None, True)
    u_mu, u_sqrt = Lu @ q_mu, np.einsum("ij,djk->dik", Lu, q_sqrt)
    u_layer = SVGPLayer(kernel, Z, u_mu, u_sqrt, None, False)
    wc = layer_forward(w_layer, X)[3][2]
    uc = layer_forward(u_layer, X)[3][2]
    w = np.ones(X.shape[0])
    mw, sw = gaussian_natgrad_step(q_mu, q_sqrt, wc.A, Y, w, noise, gamma, Lu, True)
    mu_, su = gaussian_natgrad_step(u_mu, u_sqrt, uc.A, Y, w, noise, gamma, Lu, False)
    np.testing.assert_allclose(Lu @ mw, mu_, atol=1e-8)
    Sw = Lu @ sw[0] @ sw[0].T @ Lu.T
    np.testing.assert_allclose(Sw, su[0] @ su[0].T, atol=1e-8)


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("keep_B", [True, False])
def test_workspace_gives_the_same_bits(rng, whiten, keep_B, monkeypatch):
    """Layer forward + backward with a reused workspace equal the plain calls bit for bit.

    Two steps at different inputs reuse the buffers; ``keep_B=False`` covers the path that
    recomputes ``B_d`` in the backward pass.
    """
    import sklearn_lvgp.variational._layer as layer_module
    from sklearn_lvgp._core.workspace import Workspace

    if not keep_B:
        monkeypatch.setattr(layer_module, "_MAX_CACHED_B", 0)
    kernel, p = _layer_inputs(rng, 3, 2, whiten)
    layer = SVGPLayer(kernel, p["Z"], p["q_mu"], p["q_sqrt"], LinearMean(
        rng.standard_normal((3, 2))), whiten)
    ws = Workspace()
    for step in range(2):
        H = rng.standard_normal((P + step, 3))  # the second step is larger: buffers grow
        dmu, dvar = rng.standard_normal((2, P + step, 2))
        plain = layer_forward(layer, H)
        reused = layer_forward(layer, H, workspace=ws)
        for a, b in zip(plain[:3], reused[:3], strict=True):
            np.testing.assert_array_equal(a, b)
        mc = reused[3][2]  # K_uf (an RBF kernel writes it in place) and A1 are the workspace's
        assert np.shares_memory(mc.kernel_cache[2], ws.array("Kuf", (1,)))
        assert np.shares_memory(mc.A1, ws.array("A1", (1,)))
        g_plain = layer_vjp(dmu, dvar, -1.0, plain[3])
        g_reused = layer_vjp(dmu, dvar, -1.0, reused[3])
        for a, b in zip(g_plain, g_reused, strict=True):
            np.testing.assert_array_equal(a, b)
            assert not any(np.shares_memory(a, buf) for buf in ws._flat.values())


def test_workspace_reuses_and_grows():
    from sklearn_lvgp._core.workspace import Workspace

    ws = Workspace()
    a = ws.array("B", (4, 5))
    b = ws.array("B", (2, 3))
    assert np.shares_memory(a, b) and b.flags.c_contiguous and b.shape == (2, 3)
    c = ws.array("B", (6, 5))  # larger than the buffer: a new one
    assert not np.shares_memory(a, c) and c.shape == (6, 5)
    assert not np.shares_memory(c, ws.array("dA", (6, 5)))
    import pickle

    assert pickle.loads(pickle.dumps(ws))._flat == {}


@pytest.mark.parametrize("keep_B", [True, False])
def test_jitted_output_loops_equal_the_per_output_products(rng, keep_B):
    """The per-output loops of the marginals (one jitted call each way) compute, for every
    output, ``var_d = base + colsum(B_d ∘ B_d)`` with ``B_d = L_dᵀ A``, ``2 tril(A (B_d ∘
    dv_d)ᵀ)`` and ``dA += 2 L_d (B_d ∘ dv_d)``, reading only the lower triangle of ``L_d``."""
    from sklearn_lvgp._core.blas_numba import DTRMM
    from sklearn_lvgp.variational._layer import _transposed_factors
    from sklearn_lvgp.variational._outputs_numba import output_variances, output_variances_vjp

    D, m, p = 3, 6, 11
    A = rng.standard_normal((m, p))
    L = np.tril(rng.standard_normal((D, m, m)))
    junk = L + np.triu(rng.standard_normal((D, m, m)), 1)  # the upper triangle is not read
    base = rng.random(p)
    dv = rng.standard_normal((p, D))
    dA0 = rng.standard_normal((m, p))
    B_ref = np.stack([L[d].T @ A for d in range(D)])
    var_ref = base[:, None] + np.einsum("dmp,dmp->pd", B_ref, B_ref)
    dq_ref = np.stack([2.0 * np.tril(A @ (B_ref[d] * dv[:, d]).T) for d in range(D)])
    dA_ref = dA0 + sum(2.0 * L[d] @ (B_ref[d] * dv[:, d]) for d in range(D))

    Lf = _transposed_factors(junk)
    Bs = np.full((D if keep_B else 1, m, p), np.nan)
    var = np.empty((p, D))
    output_variances(DTRMM, Lf, A, base, Bs, var)
    np.testing.assert_allclose(var, var_ref, rtol=1e-13)
    if keep_B:
        np.testing.assert_allclose(Bs, B_ref, rtol=1e-13, atol=1e-15)
    dA, dq = dA0.copy(), np.full((D, m, m), np.nan)
    output_variances_vjp(DTRMM, Lf, A, Bs, dv, dA, dq, np.empty((m, p)))
    np.testing.assert_allclose(dq, dq_ref, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dA, dA_ref, rtol=1e-13, atol=1e-14)
