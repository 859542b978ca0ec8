"""Gradient checks of the latent-variable DeepGP bounds (Salimbeni 2020, ch. 5).

Central finite differences, fixed noise and minibatch: the recognition MLP, the joint ``K x K``
inner-layer draw of Salimbeni 2020, §5.2.3 (w.r.t. the layer's parameters and inputs), and the full
VI (eq. 5.3) and importance-weighted (eq. 5.11) bounds w.r.t. every parameter block.
"""

import numpy as np
import pytest

from sklearn_lvgp import DeepGP
from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.kernels import RBF
from sklearn_lvgp.nn._cde_encoder import RecognitionMLP
from sklearn_lvgp.utils.gradcheck import check_grad
from sklearn_lvgp.variational import SVGPLayer, layer_forward, tril_pack, tril_unpack
from sklearn_lvgp.variational._joint import (
    block_kernel,
    block_kernel_vjp,
    joint_layer_vjp,
    joint_sample,
)
from sklearn_lvgp.variational._mean_functions import LinearMean


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threads(1):
        yield


def test_recognition_mlp_backward(rng):
    """Encoder weights and biases (tanh layers, residual skip on equal widths, linear output)."""
    enc = RecognitionMLP(3, (4, 4), 2)
    p0 = enc.initial(rng)
    names = [b[0] for b in enc.blocks()]
    shapes = [b[1] for b in enc.blocks()]
    sizes = [int(np.prod(s)) for s in shapes]
    E = rng.standard_normal((7, 3))
    Wout = rng.standard_normal((7, 2))

    def unflat(z):
        out, i = {}, 0
        for n, s, k in zip(names, shapes, sizes, strict=True):
            out[n] = z[i:i + k].reshape(s)
            i += k
        return out

    def fun(z):
        p = unflat(z)
        out, cache = enc.forward(p, E)
        g = enc.backward(Wout, cache, p)
        return float(np.sum(Wout * out)), np.concatenate([g[n].ravel() for n in names])

    x0 = np.concatenate([p0[n].ravel() + 0.3 * rng.standard_normal(p0[n].size) for n in names])
    ends = np.cumsum(sizes)
    check_grad(fun, x0, rtol=1e-7,
               blocks={n: slice(e - k, e) for n, k, e in zip(names, sizes, ends, strict=True)})


def test_block_kernel_and_its_backward(rng):
    """Diagonal K x K blocks equal slices of the full kernel matrix; backward by FD."""
    k = RBF(length_scale=np.array([0.7, 1.3]), variance=1.5).initialize(2, rng)
    H = rng.standard_normal((4 * 3, 2))
    B = block_kernel(k, H, 3)
    full = k.K(H)
    for g in range(4):
        np.testing.assert_allclose(B[g], full[3 * g:3 * g + 3, 3 * g:3 * g + 3], rtol=1e-14)
    W = rng.standard_normal((4, 3, 3))
    W = W + np.swapaxes(W, 1, 2)

    def fun(h):
        Hh = h.reshape(H.shape)
        dH, _ = block_kernel_vjp(k, Hh, W)
        return float(np.sum(W * block_kernel(k, Hh, 3))), dH.ravel()

    check_grad(fun, H.ravel(), rtol=1e-7, blocks={"H": slice(None)})


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("D", [1, 3])
def test_joint_draw_backward(rng, whiten, D):
    """Joint draw over the proposals (Salimbeni 2020, §5.2.3): h = mu + chol(Sigma + delta I) eps,
    w.r.t. q_mu, q_sqrt, Z, theta and inputs H."""
    M, G, K, D_in = 5, 4, 3, 2
    k0 = RBF(length_scale=np.array([0.8, 1.2]), variance=1.3).initialize(D_in, rng)
    Z0 = rng.standard_normal((M, D_in))
    H0 = rng.standard_normal((G * K, D_in))
    q_mu0 = rng.standard_normal((M, D))
    q_sqrt0 = np.tril(0.3 * rng.standard_normal((D, M, M))) + 0.6 * np.eye(M)
    mean = LinearMean(rng.standard_normal((D_in, D)))
    eps = rng.standard_normal((G, K, D))
    Wh = rng.standard_normal((G * K, D))
    T = M * (M + 1) // 2
    sizes = [M * D, D * T, M * D_in, k0.n_theta, G * K * D_in]

    def split(z):
        out, i = [], 0
        for s in sizes:
            out.append(z[i:i + s])
            i += s
        return out

    def fun(z):
        qm, qs, Zf, th, Hf = split(z)
        layer = SVGPLayer(k0.clone_with_theta(th), Zf.reshape(M, D_in), qm.reshape(M, D),
                          tril_unpack(qs.reshape(D, T), M), mean, whiten)
        Hh = Hf.reshape(G * K, D_in)
        mu, _, kl, cache = layer_forward(layer, Hh)
        draw, jc = joint_sample(cache, eps, 1e-6)
        f = float(np.sum(Wh * (mu + draw))) - kl
        g = joint_layer_vjp(Wh, -1.0, cache, jc)
        return f, np.concatenate([g.q_mu.ravel(), tril_pack(g.q_sqrt).ravel(), g.Z.ravel(),
                                  g.theta, g.H.ravel()])

    x0 = np.concatenate([q_mu0.ravel(), tril_pack(q_sqrt0).ravel(), Z0.ravel(), k0.theta,
                         H0.ravel()])
    check_grad(fun, x0, rtol=1e-6)


def _lv_model(n_layers, inference, whiten=True, transform="softplus", K=3, joint=True):
    rs = np.random.RandomState(0)
    X = rs.randn(12, 2)
    y = np.sin(X[:, 0]) + 0.1 * rs.randn(12)
    m = DeepGP(n_layers=n_layers, hidden_dims=2, n_inducing=4, max_iter=2, latent_dim=1,
               inference=inference, n_importance=K, whiten=whiten, positive_transform=transform,
               encoder_hidden=(5, 5), random_state=0).fit(X, y)
    m._model.joint_inner = joint
    Xs = (X - m.X_mean_) / m.X_scale_
    Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
    return m, Xs, Ys


def _well_conditioned(m, rng):
    """Perturbed parameters with inner q_sqrt = 0.5 I: keeps the K x K covariances far from the
    delta = 1e-6 floor, where central differences of the Cholesky factor lose accuracy."""
    model = m._model
    x = m._x + 0.1 * rng.standard_normal(m._x.size)
    for ell in range(model.n_layers - 1):
        D = model.dims[ell + 1]
        x[model.packer.slice(f"q_sqrt{ell}")] = tril_pack(
            np.repeat(0.5 * np.eye(model.M)[None], D, 0)).ravel()
    return x


@pytest.mark.parametrize("n_layers,inference,whiten,transform,joint", [
    (1, "vi", True, "softplus", True), (1, "iwvi", False, "log", True),
    (2, "vi", True, "log", True), (2, "vi", False, "softplus", True),
    (2, "iwvi", True, "softplus", True), (2, "iwvi", False, "log", True),
    (2, "iwvi", True, "softplus", False),
    (3, "vi", True, "softplus", True), (3, "iwvi", False, "softplus", True)])
def test_latent_bound_gradient(rng, n_layers, inference, whiten, transform, joint):
    """VI (eq. 5.3) and IW (eq. 5.11) bounds: every GP block, the noise, the encoder weights;
    S = 2 samples, K = 3 proposals, minibatch of 5 of 12 rows (c = N/|B|)."""
    m, Xs, Ys = _lv_model(n_layers, inference, whiten, transform, joint=joint)
    model = m._model
    x = _well_conditioned(m, rng)
    idx = np.array([1, 4, 5, 7, 9])
    S = 2
    P = S * idx.size * model.K
    eps = {"w": rng.standard_normal((P, 1)),
           "inner": [rng.standard_normal((P, 2)) for _ in range(n_layers - 1)]}
    check_grad(lambda z: model.elbo(z, Xs[idx], Ys[idx], 12 / 5, S, eps=eps), x, rtol=1e-6,
               blocks=model.packer)


@pytest.mark.parametrize("n_layers,whiten", [(1, True), (2, True), (2, False)])
def test_latent_natgrad_gamma_one_is_optimal_for_fixed_samples(rng, n_layers, whiten):
    """``LatentDSVI.natgrad`` (Salimbeni 2020, §3.4.6 and §5.2.5), VI bound, Gaussian
    likelihood: with the draws of w and of the inner layers held fixed the bound is a concave
    quadratic in the last layer's q(u), and one step of size one lands on its maximum: the
    gradient there vanishes and a second step does not move."""
    m, Xs, Ys = _lv_model(n_layers, "vi", whiten)
    model = m._model
    x = _well_conditioned(m, rng)
    batch = (Xs[[1, 4, 5, 7, 9]], Ys[[1, 4, 5, 7, 9]], 12 / 5, 2)
    x1 = model.natgrad(x, *batch, 1.0, np.random.RandomState(7))
    f0, g0 = model.elbo(x, *batch, np.random.RandomState(7))
    f1, g1 = model.elbo(x1, *batch, np.random.RandomState(7))
    assert f1 > f0
    for name in (f"q_mu{n_layers - 1}", f"q_sqrt{n_layers - 1}"):
        block = model.packer.slice(name)
        assert np.max(np.abs(g1[block])) <= 1e-10 * np.max(np.abs(g0[block])), name
    x2 = model.natgrad(x1, *batch, 1.0, np.random.RandomState(7))
    np.testing.assert_allclose(x2, x1, rtol=1e-12, atol=1e-12)
