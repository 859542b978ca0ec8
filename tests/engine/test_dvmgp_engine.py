"""The DVMGP bound through the chunk engine: equal to the one-piece composition, thread-proof."""

import numpy as np
import pytest

from sklearn_lvgp._core.parallel import threads
from sklearn_lvgp.bounds._collapsed_global import collapsed_bound, collapsed_bound_vjp
from sklearn_lvgp.bounds._dvmgp import dvmgp_elbo_and_grads
from sklearn_lvgp.utils.gradcheck import check_grad
from sklearn_lvgp.variational._projection import (
    latent_moments,
    latent_moments_vjp,
    output_kernel,
    output_psi,
    output_psi_vjp,
    projection_forward,
    projection_kernels,
    projection_vjp,
)

N, D, Q, m_v, m_u, Dy = 23, 3, 2, 4, 5, 2


def _params(seed=0, full=False):
    r = np.random.default_rng(seed)
    X = r.standard_normal((N, D))
    Y = r.standard_normal((N, Dy))
    chol = (np.tril(0.2 * r.standard_normal((Q, m_v, m_v))) + np.eye(m_v) if full
            else 0.5 + r.random((Q, m_v)))
    p = {"zeta": r.standard_normal((m_u, Q)), "Xi": r.standard_normal((m_v, D)),
         "mu": 0.3 * r.standard_normal((Q, m_v, D)), "wtheta": 0.2 * r.standard_normal(
             (Q, 1 + D)), "signal_std": 1.3, "noise": 0.2}
    return X, Y, p, chol


def _reference(X, Y, p, chol, jitter=1e-6):
    """The one-piece composition (projection, latent moments, output Ψ, collapsed bound)."""
    zeta, sf, s2 = p["zeta"], float(p["signal_std"]), float(p["noise"])
    a, b, kl, pcache = projection_forward(X, p["Xi"], p["mu"], chol,
                                          projection_kernels(p["wtheta"]), jitter)
    h, eta = latent_moments(a, b, X)
    stats, ocache = output_psi(zeta, h, eta, sf)
    kern = output_kernel(sf, Q)
    F, post = collapsed_bound(Y, stats.psi0, stats.Psi1, stats.Psi2, kern.K(zeta), s2,
                              jitter=jitter)
    adj = collapsed_bound_vjp(post)
    dh, deta, dzeta, dsf = output_psi_vjp(adj.psi0, adj.Psi1, adj.Psi2, ocache)
    kv = kern.vjp(adj.Kuu, zeta)
    da, db = latent_moments_vjp(dh, deta, b, X)
    g = projection_vjp(da, db, -1.0, pcache)
    return F - kl, {"zeta": dzeta + kv.X, "Xi": g.Xi, "mu": g.mu, "wtheta": g.theta,
                    "chol": g.chol, "signal_std": dsf + 2.0 * float(kv.theta[0]) / sf,
                    "noise": adj.noise_variance}


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("chunk_rows", [1, 7, N])
def test_chunked_dvmgp_equals_one_piece(full, chunk_rows, jitted):
    """Both chunk passes (numpy, and jitted) equal the one-piece composition."""
    X, Y, p, chol = _params(full=full)
    F_ref, g_ref = _reference(X, Y, p, chol)
    F, grads, _ = dvmgp_elbo_and_grads(X, Y, p, chol, 1e-6, chunk_rows=chunk_rows,
                                       jitted=jitted)
    assert F == pytest.approx(F_ref, rel=1e-10)
    for key, ref in g_ref.items():
        np.testing.assert_allclose(grads[key], ref, rtol=1e-10,
                                   atol=1e-10 * max(1.0, np.max(np.abs(ref))), err_msg=key)


@pytest.mark.parametrize("jitted", [False, True])
def test_chunked_dvmgp_bit_identical_for_every_thread_count(jitted):
    X, Y, p, chol = _params(1)
    results = []
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            results.append(dvmgp_elbo_and_grads(X, Y, p, chol, 1e-6, chunk_rows=4,
                                                jitted=jitted))
    for F, grads, _ in results[1:]:
        assert F == results[0][0]
        for key in grads:
            np.testing.assert_array_equal(grads[key], results[0][1][key])


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("keep", [True, False])
def test_dvmgp_workspaces_change_no_bit_and_keep_their_memory(monkeypatch, keep, jitted):
    """With the caller's workspace list the bound and every gradient keep their bits, for
    kept and recomputed chunk caches and any thread count; kept chunks reuse their buffers
    from the first evaluation on."""
    from sklearn_lvgp.engine import _rows

    if not keep:
        monkeypatch.setattr(_rows, "KEEP_TOTAL", 0)
    X, Y, p, chol = _params(3)
    F_ref, g_ref, _ = dvmgp_elbo_and_grads(X, Y, p, chol, 1e-6, chunk_rows=6, jitted=jitted)
    workspaces, first = [], None
    for n_jobs in (1, 2, 3):
        with threads(n_jobs):
            F, grads, _ = dvmgp_elbo_and_grads(X, Y, p, chol, 1e-6, chunk_rows=6,
                                               workspaces=workspaces, jitted=jitted)
        assert F == F_ref
        for key in g_ref:
            np.testing.assert_array_equal(grads[key], g_ref[key], err_msg=key)
        buffers = [dict(w._flat) for w in workspaces]
        first = first or buffers
        assert all(now[k] is then[k] for now, then in zip(buffers, first, strict=True)
                   for k in then)
    assert len(workspaces) == (4 if keep else 0)  # 23 rows in chunks of 6
    assert all(buffers) if keep else True


@pytest.mark.parametrize("jitted", [False, True])
def test_chunked_dvmgp_gradient_matches_finite_differences(jitted):
    from sklearn_lvgp._core.params import ParamPacker

    X, Y, p0, chol0 = _params(2)
    packer = ParamPacker([("zeta", (m_u, Q)), ("Xi", (m_v, D)), ("mu", (Q, m_v, D)),
                          ("wtheta", (Q, 1 + D)), ("chol", (Q, m_v), "log"),
                          ("signal_std", (), "log"), ("noise", (), "log")])

    def fun(flat):
        p = packer.unpack(flat)
        F, grads, _ = dvmgp_elbo_and_grads(X, Y, p, p["chol"], 1e-6, chunk_rows=5,
                                           jitted=jitted)
        return F, packer.pack_grad(grads, p)

    check_grad(fun, packer.pack({**p0, "chol": chol0}), rtol=1e-5)



def test_jitted_passes_from_the_work_threshold(monkeypatch):
    """The default takes the jitted chunk passes exactly from ``JITTED_MIN_WORK`` (and several
    chunks), and the numpy ones below it."""
    from sklearn_lvgp.bounds import _dvmgp as engine_dvmgp

    X, Y, p, chol = _params()
    calls = []
    real = engine_dvmgp.chunk_latent_forward
    monkeypatch.setattr(engine_dvmgp, "chunk_latent_forward",
                        lambda *a: calls.append(1) or real(*a))
    work = Q * m_v * (m_v + D) + Q * m_u * (m_u + 1) // 2
    for threshold, chunk_rows, expected in [(N * work, 7, True), (N * work + 1, 7, False),
                                            (0, N, False)]:
        calls.clear()
        monkeypatch.setattr(engine_dvmgp, "JITTED_MIN_WORK", threshold)
        dvmgp_elbo_and_grads(X, Y, p, chol, 1e-6, chunk_rows=chunk_rows)
        assert bool(calls) is expected, (threshold, chunk_rows)
