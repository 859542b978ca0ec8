"""GPCDE objective (Salimbeni 2020, ch. 4): gradient checks and exact identities."""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.bounds._gpcde import CDEModel
from sklearn_lvgp.expectations._rules import gauss_hermite_rule, unscented_rule
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.likelihoods._gaussian import gaussian_expectation
from sklearn_lvgp.likelihoods._mixed_gaussian import (
    conditional_ell,
    conditional_ell_vjp,
    predictive_log_density,
)
from sklearn_lvgp.nn._cde_encoder import (
    encoder_backward,
    encoder_forward,
    encoder_init,
    encoder_shapes,
    proposal_scale,
    proposal_scale_vjp,
)
from sklearn_lvgp.utils.gradcheck import check_grad, check_vjp
from sklearn_lvgp.variational import (
    SVGPLayer,
    layer_forward,
    marginals,
    marginals_precision_adjoint,
    natgrad_step,
    prior_factor,
)
from sklearn_lvgp.variational._kl import gaussian_kl_std

N, DX, M = 7, 3, 5


@pytest.fixture(autouse=True)
def _one_thread():
    """Single-threaded BLAS: these are many tiny products, slower with thread hand-offs."""
    with threads(1):
        yield


def _model(q_w="quadrature", expectation="monte_carlo", Dw=1, proj=None, mixing=False, L=None,
           Dy=1, whiten=True, seed=0, S=2, gh_order=7, length_scale=1.3):
    rs = np.random.RandomState(seed)
    Dh = proj if proj else DX
    L = L or Dy
    ls = np.full(Dh + Dw, 1.3)
    ls[Dh:] = length_scale
    k = RBF(length_scale=ls, variance=0.8)
    m = CDEModel(k, DX, proj, Dw, L, Dy, M, mixing, q_w, expectation, S, gh_order, N,
                 (4, 4), whiten, 1e-8)
    X, Y = rs.randn(N, DX), rs.randn(N, Dy)
    v = {"q_mu": rs.randn(M, L), "q_sqrt": np.tril(rs.randn(L, M, M)) * 0.3 + np.eye(M),
         "Z": rs.randn(M, Dh + Dw), "kernel": k, "noise_variance": 0.3}
    if mixing:
        v["P"] = rs.randn(L, Dy)
    if proj:
        v["A_mu"], v["A_s"] = rs.randn(DX, Dh), 0.1 + rs.rand(DX, Dh)
    if q_w == "gaussian":
        v["w_mean"], v["w_rho"] = rs.randn(N, Dw), rs.randn(N, Dw) + 3
    if q_w == "amortized":
        ps = encoder_init(m.enc_shapes, rs)
        for i in range(len(m.enc_shapes)):
            v[f"enc_W{i}"] = ps[2 * i]
            v[f"enc_b{i}"] = ps[2 * i + 1] + 0.1 * rs.randn(*ps[2 * i + 1].shape)
    return m, m.pack(v), X, Y, rs


CONFIGS = {
    "quadrature": {},
    "quadrature-unwhitened": {"whiten": False},
    "quadrature-2d": {"Dw": 2},
    "no-latent": {"Dw": 0},
    "mixing-L<Dy": {"mixing": True, "L": 2, "Dy": 3},
    "mixing-L>Dy-unwhitened": {"mixing": True, "L": 3, "Dy": 2, "whiten": False},
    "free-mc": {"q_w": "gaussian"},
    "free-unscented-2d": {"q_w": "gaussian", "expectation": "unscented", "Dw": 2},
    "amortized-mc": {"q_w": "amortized"},
    "amortized-unscented-mixing": {"q_w": "amortized", "expectation": "unscented", "Dw": 2,
                                   "mixing": True, "L": 2, "Dy": 2},
    "projection-quadrature": {"proj": 2},
    "projection-amortized-unwhitened": {"proj": 2, "q_w": "amortized", "whiten": False},
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_bound_gradient(name):
    """The whole bound wrt every block, fixed eps and minibatch."""
    cfg = CONFIGS[name]
    m, x, X, Y, rs = _model(**cfg)
    idx = np.array([0, 2, 3, 5])
    Dh = cfg.get("proj") or DX
    eps_w = rs.randn(4, 2, cfg.get("Dw", 1))
    eps_A = rs.randn(4, Dh)

    def f(z):
        return m.elbo(z, X[idx], Y[idx], idx, 1.75, None,
                      eps_w if cfg.get("expectation", "monte_carlo") == "monte_carlo" else None,
                      eps_A if cfg.get("proj") else None)

    check_grad(f, x, rtol=1e-6, blocks=m.packer)


def test_conditional_ell_vjp(rng):
    """Expected log-likelihood L_n(t) wrt mu, var, P, s2 with random P and L != D_y."""
    n, L, Dy = 6, 2, 3
    Y = rng.standard_normal((n, Dy))
    inputs = {"mu": rng.standard_normal((n, L)), "var": rng.uniform(0.1, 1, (n, L)),
              "P": rng.standard_normal((L, Dy)), "s2": np.array(0.4)}

    def forward(mu, var, P, s2):
        return conditional_ell(Y, mu, var, P, float(s2))[0]

    def backward(w, mu, var, P, s2):
        g = conditional_ell_vjp(w, conditional_ell(Y, mu, var, P, float(s2))[1])
        return {"mu": g.mu, "var": g.var, "P": g.P, "s2": np.array(g.noise_variance)}

    check_vjp(forward, backward, inputs, rng, rtol=1e-6)


def test_encoder_vjp(rng):
    """The recognition MLP alone (tanh, residual skip on the 20 -> 20-like layer)."""
    shapes = encoder_shapes(3, (4, 4), 2)
    params = encoder_init(shapes, np.random.RandomState(0))
    inp = rng.standard_normal((5, 3))
    names = [f"p{i}" for i in range(len(params))]
    inputs = dict(zip(names, [p + 0.1 * rng.standard_normal(p.shape) for p in params], strict=True))
    inputs["inp"] = inp

    def forward(inp, **ps):
        return encoder_forward([ps[k] for k in names], inp)[0]

    def backward(w, inp, **ps):
        plist = [ps[k] for k in names]
        _, cache = encoder_forward(plist, inp)
        return dict(zip(names, encoder_backward(w, plist, cache), strict=True))

    check_vjp(forward, backward, inputs, rng, rtol=1e-6)


@pytest.mark.parametrize("floor", [0.0, 1e-6])
def test_proposal_scale_vjp(rng, floor):
    """The recognition network's scale head ``b = softplus(rho - 3) + floor``."""
    check_vjp(lambda rho: proposal_scale(rho, floor),
              lambda w, rho: {"rho": proposal_scale_vjp(w, rho)},
              {"rho": 3.0 + rng.standard_normal((4, 2))}, rng, rtol=1e-7)


# ------------------------------------------------------------------------ exact identities
def _svgp_bound(m, x, X, Y):
    p = m.unpack(x)
    k = p["kernel"]
    kx = RBF(length_scale=np.asarray(k.length_scale)[:DX], variance=k.variance)
    layer = SVGPLayer(kx, p["Z"][:, :DX], p["q_mu"], p["q_sqrt_full"], None, m.whiten)
    mu, var, kl, _ = layer_forward(layer, X, m.jitter)
    return float(np.sum(gaussian_expectation(Y, mu, var, p["s2"]))) - kl


def test_latent_dim_zero_is_svgp():
    """With no latent dimension the bound is the SVGP bound."""
    m, x, X, Y, _ = _model(Dw=0, Dy=2)
    f, _ = m.elbo(x, X, Y, np.arange(N), 1.0)
    np.testing.assert_allclose(f, _svgp_bound(m, x, X, Y), rtol=1e-10)


def test_switched_off_latent_is_svgp():
    """Latent length scale 1e6 -> quadrature bound equals the SVGP bound on x."""
    m, x, X, Y, _ = _model(length_scale=1e6, gh_order=20)
    f, _ = m.elbo(x, X, Y, np.arange(N), 1.0)
    np.testing.assert_allclose(f, _svgp_bound(m, x, X, Y), rtol=1e-6)


def test_quadrature_accuracy():
    """Quadrature (Salimbeni 2020, eq. 4.8): H = 100 vs 200 agree to 1e-8, H = 20 to 1e-3."""
    vals = {}
    for H in (20, 100, 200):
        m, x, X, Y, _ = _model(gh_order=H)
        vals[H] = m.elbo(x, X, Y, np.arange(N), 1.0)[0]
    np.testing.assert_allclose(vals[100], vals[200], rtol=1e-8)
    np.testing.assert_allclose(vals[20], vals[200], rtol=1e-3)


def test_quadrature_dominates_gaussian_q(rng):
    """Optimality: the quadrature term >= E_q L_n - KL(q || p) for random Gaussian q(w_n)."""
    m, x, X, Y, _ = _model(gh_order=60)
    p = m.unpack(x)
    prior = prior_factor(p["kernel"], p["Z"], m.jitter)
    rule = gauss_hermite_rule(200, 1)
    nodes, logw = rule.nodes, rule.log_weights

    def Ln(w):
        H = np.hstack([np.repeat(X[:1], w.size, 0), w[:, None]])
        mu, var, _ = marginals(p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"], H, prior.Lu)
        return conditional_ell(np.repeat(Y[:1], w.size, 0), mu, var, None, p["s2"])[0]

    from scipy.special import logsumexp
    quad = logsumexp(logw + Ln(nodes[:, 0]))
    for _ in range(100):
        a, b = rng.normal(0, 1.5), rng.uniform(0.05, 2.0)
        kl = gaussian_kl_std(np.array([[a]]), np.array([[b]]), per_row=True)[0]
        lower = np.exp(logw) @ Ln(a + b * nodes[:, 0]) - kl
        assert lower <= quad + 1e-10
    # equality at q* on the grid: E_q* L - KL(q* || p) with q* = softmax(logw + L)
    Lg = Ln(nodes[:, 0])
    r = np.exp(logw + Lg - quad)
    np.testing.assert_allclose(r @ Lg - np.sum(r * (np.log(r) - logw)), quad, rtol=1e-6)


def test_unscented_exact_for_cubics(rng):
    """Unscented sigma points integrate every monomial of degree <= 3 exactly."""
    for dim in (1, 2):
        _, xi, w = unscented_rule(dim)
        a, b = rng.standard_normal(dim), rng.uniform(0.2, 1.5, dim)
        pts = a + b * xi
        gh_rule = gauss_hermite_rule(10, dim)
        gh, lw = gh_rule.nodes, gh_rule.log_weights
        exact_pts = a + b * gh
        for powers in np.ndindex(*([4] * dim)):
            if sum(powers) > 3:
                continue
            g = np.prod(pts ** np.array(powers), axis=1)
            ge = np.prod(exact_pts ** np.array(powers), axis=1)
            np.testing.assert_allclose(w @ g, np.exp(lw) @ ge, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("L, Dy", [(2, 4), (4, 2)])
def test_woodbury_density(rng, L, Dy):
    """The Woodbury log-density equals the dense multivariate normal."""
    P = rng.standard_normal((L, Dy))
    mu, var = rng.standard_normal((5, L)), rng.uniform(0.1, 2, (5, L))
    Y = rng.standard_normal((5, Dy))
    got = predictive_log_density(Y, mu, var, P, 0.3)
    want = [multivariate_normal(mu[i] @ P, P.T @ np.diag(var[i]) @ P + 0.3 * np.eye(Dy))
            .logpdf(Y[i]) for i in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_projection_kl_numeric():
    """KL_A matches a numeric integral (one entry)."""
    mu, s = 0.7, 0.4
    q = lambda a: np.exp(-0.5 * ((a - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))  # noqa: E731
    p = lambda a: np.exp(-0.5 * a * a) / np.sqrt(2 * np.pi)  # noqa: E731
    num, _ = integrate.quad(lambda a: q(a) * np.log(q(a) / p(a)), -10, 10)
    np.testing.assert_allclose(gaussian_kl_std(np.array([[mu]]), np.array([[s]])), num, rtol=1e-8)


def test_projection_small_variance_is_fixed_projection():
    """Bayesian projection with s -> 1e-8 equals a fixed projection (bound without its KL)."""
    m, x, X, Y, rs = _model(proj=2)
    p = m.packer.unpack(x)
    p["A_s"] = np.full_like(p["A_s"], 1e-8)
    x2 = m.packer.pack(p)
    eps = rs.randn(N, 2)
    f, _ = m.elbo(x2, X, Y, np.arange(N), 1.0, eps_A=eps)
    f0, _ = m.elbo(x2, X, Y, np.arange(N), 1.0, eps_A=np.zeros_like(eps))
    np.testing.assert_allclose(f, f0, rtol=1e-8)


# ------------------------------------------------------------------------- natural gradients
def _q_grad(m, f):
    g = f[1]
    return np.concatenate([g[m.packer.slice("q_mu")], g[m.packer.slice("q_sqrt")]])


@pytest.mark.parametrize("cfg", [{"q_w": "gaussian"}, {"q_w": "gaussian", "whiten": False},
                                 {"q_w": "amortized", "expectation": "unscented", "Dw": 2}])
def test_natgrad_gamma_one_reaches_optimum(cfg):
    """Natural gradients: P = I, fixed samples, full batch, gamma = 1 -> dL/d(m, S) = 0."""
    m, x, X, Y, rs = _model(S=3, **cfg)
    idx = np.arange(N)
    eps = rs.randn(N, 3, cfg.get("Dw", 1)) if cfg.get("expectation") != "unscented" else None
    x1 = m.natgrad(x, X, Y, idx, 1.0, 1.0, eps_w=eps)
    g0 = _q_grad(m, m.elbo(x, X, Y, idx, 1.0, eps_w=eps))
    g1 = _q_grad(m, m.elbo(x1, X, Y, idx, 1.0, eps_w=eps))
    assert np.max(np.abs(g1)) < 1e-8 * max(1.0, np.max(np.abs(g0)))


@pytest.mark.parametrize("whiten", [True, False])
def test_natgrad_quadrature_fixed_point(whiten):
    """Quadrature weights: gamma = 1 natural-gradient steps never lower the bound and converge."""
    m, x, X, Y, _ = _model(whiten=whiten)
    idx = np.arange(N)
    vals = [m.elbo(x, X, Y, idx, 1.0)[0]]
    for _ in range(20):
        x = m.natgrad(x, X, Y, idx, 1.0, 1.0)
        vals.append(m.elbo(x, X, Y, idx, 1.0)[0])
    assert np.all(np.diff(vals) >= -1e-9 * np.abs(vals[:-1]))
    assert abs(vals[-1] - vals[-2]) < 1e-8 * abs(vals[-1])


def test_natgrad_explicit_equals_generic():
    """The per-latent natural-gradient formula equals theta + gamma dL/deta (random P)."""
    m, x, X, Y, _ = _model(mixing=True, L=2, Dy=3)
    idx = np.arange(N)
    gamma = 0.3
    p = m.unpack(x)
    q_mu, q_sqrt, P, s2 = p["q_mu"], p["q_sqrt_full"], p["P_"], p["s2"]
    f, g = m.elbo(x, X, Y, idx, 1.0)
    dL_dm = g[m.packer.slice("q_mu")].reshape(q_mu.shape)
    # dL/dS: marginals part (responsibility-weighted dvar) plus the whitened KL part
    prior = prior_factor(p["kernel"], p["Z"], m.jitter)
    H = np.hstack([np.repeat(X, m.nodes.shape[0], 0), np.tile(m.nodes, (N, 1))])
    mu, var, mc = marginals(p["kernel"], p["Z"], q_mu, q_sqrt, H, prior.Lu)
    Yr = np.repeat(Y, m.nodes.shape[0], 0)
    vals, cc = conditional_ell(Yr, mu, var, P, s2)
    from sklearn_lvgp.variational._latent_covariate import quadrature_bound
    _, resp = quadrature_bound(m.logw, vals.reshape(N, -1))
    dvar = conditional_ell_vjp(resp.ravel(), cc).var
    G = marginals_precision_adjoint(dvar, mc)
    for e in range(2):
        S = q_sqrt[e] @ q_sqrt[e].T
        G[e] += -0.5 * (np.eye(M) - np.linalg.inv(S))
    want_mu, want_sqrt = natgrad_step(q_mu, q_sqrt, dL_dm, G, gamma)
    x1 = m.natgrad(x, X, Y, idx, 1.0, gamma)
    p1 = m.unpack(x1)
    np.testing.assert_allclose(p1["q_mu"], want_mu, rtol=1e-7, atol=1e-7)
    for e in range(2):
        np.testing.assert_allclose(p1["q_sqrt_full"][e] @ p1["q_sqrt_full"][e].T,
                                   want_sqrt[e] @ want_sqrt[e].T, rtol=1e-7, atol=1e-7)
