"""LDGD training and test-time problems on a flat parameter vector.

Training maximises the bound of Ziaei et al. (2024, eq. 28; §2.3.8), optionally with the amortised
q(X) of Fast LDGD (§2.3.10); test-time inference is that of §2.3.9.

:class:`TrainingProblem` packs q(X) (or the encoder weights), both paths' kernels, inducing inputs,
whitened q(U) and the noise variances into one unconstrained vector and evaluates the minimised
``−L̂/N`` with its gradient. :class:`InferenceProblem` does the same for test-time q(x*) with the
global parameters fixed. Each also gives its starting point and the objectives its optimiser
runs on (sigma points, or reparameterised samples of ``q(x)``, §2.3.8). The training rows live
in memory or, for a fit on Dask, in a row
source whose minibatches run where their partitions live; q(X) is then on the driver with the
other parameters, and each evaluation sends the batch's ``mu``, ``sigma`` (and Monte Carlo
draws) to the partitions holding its rows.
"""

import numpy as np

from .._core.init import pca_latents, select_inducing
from .._core.params import ParamPacker, softplus_inverse
from .._core.scaling import column_scales
from .._core.validation import check_int, check_n_inducing
from ..engine._rows import InMemoryRows
from ..expectations._rules import unscented_rule
from ..kernels import RBF, as_lvgp_kernel
from ..nn._ldgd_encoder import encoder_fit_mean_head, encoder_forward, encoder_init, encoder_vjp
from ..variational import tril_pack, tril_unpack
from ..variational._kl import gaussian_kl_std, gaussian_kl_std_vjp
from ._ldgd import LDGDBound, LDGDParams, ldgd_evaluate, ldgd_value_and_vjp, local_rows
from ._ldgd_objective import Globals

__all__ = ["NOISE_FLOOR", "TrainingProblem", "InferenceProblem", "path_settings"]

#: Lower bound added to the softplus noise variances (as in the authors' GPyTorch code).
NOISE_FLOOR = 1e-4


def path_settings(n_inducing, kernel, n_components, n_samples):
    """Inducing-point counts and unfitted kernels ``(M_r, M_c, kernel_r, kernel_c)`` of the
    regression and classification paths.

    Parameters
    ----------
    n_inducing : int or pair of int
        One count for both paths, or ``(M_r, M_c)``; at most ``n_samples``.
    kernel : Kernel, pair of Kernel or None
        One kernel for both paths (cloned per path), a ``(regression, classification)`` pair,
        or ``None`` (an ARD RBF with unit length scales and variance).
    n_components : int
        Latent dimension ``Q``.
    n_samples : int
        Training rows.

    Returns
    -------
    M_r, M_c : int
    kernel_r, kernel_c : Kernel
        Fresh clones.
    """
    M, k, Q = n_inducing, kernel, n_components
    if isinstance(M, (tuple, list)):
        if len(M) != 2:
            raise ValueError(f"n_inducing must be an int or a pair, got {M!r}.")
        M_r = check_int("n_inducing[0]", M[0], min_value=1)
        M_c = check_int("n_inducing[1]", M[1], min_value=1)
        check_n_inducing(max(M_r, M_c), n_samples, "LDGD")
    else:
        M_r = M_c = check_n_inducing(M, n_samples, "LDGD")
    if k is None:
        k_r = k_c = RBF(length_scale=np.ones(Q), variance=1.0)
    elif isinstance(k, (tuple, list)):
        if len(k) != 2 or any(v is None for v in k):
            raise TypeError(f"kernel must be a kernel, a pair of kernels or None, got {k!r}.")
        k_r, k_c = (as_lvgp_kernel(v, "kernel", Q) for v in k)
    else:
        k_r = k_c = as_lvgp_kernel(k, "kernel", Q)
    return M_r, M_c, k_r.clone(), k_c.clone()


def _initial_inducing(mu0, M, random_state):
    """``M`` rows of ``mu0``, or scaled ``N(0, 1)`` draws when there are fewer rows."""
    if M <= mu0.shape[0]:
        return select_inducing(mu0, M, random_state)
    return random_state.standard_normal((M, mu0.shape[1])) * column_scales(mu0)


class TrainingProblem:
    """The training objective of LDGD on a flat vector.

    Parameters
    ----------
    Yr : ndarray of shape (N, D) or None
        Continuous observations (``None`` with ``rows``).
    Yc : ndarray of shape (N, K) or None
        One-hot labels (``None`` with ``rows``).
    kernel_r, kernel_c : Kernel
        Initialised kernels (working copies; their ``theta`` is overwritten at every call).
    M_r, M_c : int
        Inducing points per path.
    Q : int
        Latent dimension.
    factors : tuple (w_r, w_c, gamma, beta_r, beta_c, beta_x)
        Path weights and preset factors (:data:`._objective.PRESETS`).
    encoder_shapes : list of tuple or None
        Fast-LDGD weight shapes; ``None`` optimises q(X) directly.
    jitter : float
        Relative jitter on ``K_uu``.
    gh_order : int
        Gauss–Hermite nodes.
    rows : row source, default=None
        The rows ``"Yr"`` and ``"Yc"`` in a row source with ``subset(idx, extra)`` (e.g.
        :class:`~sklearn_lvgp.engine._dask.DaskRows`) instead of ``Yr`` and ``Yc`` in memory;
        not with ``encoder_shapes`` (the encoder reads the batch's rows on the driver).
    """

    def __init__(self, Yr, Yc, kernel_r, kernel_c, M_r, M_c, Q, factors, encoder_shapes=None,
                 jitter=1e-6, gh_order=20, rows=None):
        self.Yr, self.Yc, self.rows = Yr, Yc, rows
        if rows is None:
            N, D = Yr.shape
            K = Yc.shape[1]
        else:
            if encoder_shapes is not None:
                raise ValueError("The amortised q(X) needs the rows in memory.")
            N, D = rows.shapes["Yr"]
            K = rows.shapes["Yc"][1]
        self.N, self.D, self.K, self.Q = N, D, K, Q
        self.M_r, self.M_c = M_r, M_c
        self.kernel_r, self.kernel_c = kernel_r, kernel_c
        self.factors = tuple(float(f) for f in factors)
        self.encoder_shapes = encoder_shapes
        self.jitter = float(jitter)
        self.chunk_rows = None  # rows per engine chunk; None: from the problem size
        self.gh_order = int(gh_order)
        if encoder_shapes is None:
            blocks = [("mu", (N, Q)), ("sigma", (N, Q), "softplus")]
        else:
            blocks = [(f"enc{k}", s) for k, s in enumerate(encoder_shapes)]
        blocks += [("theta_r", (kernel_r.n_theta,)), ("Z_r", (M_r, Q)), ("qmu_r", (M_r, D)),
                   ("qsqrt_r", (D, M_r * (M_r + 1) // 2)), ("noise", (D,), "softplus"),
                   ("theta_c", (kernel_c.n_theta,)), ("Z_c", (M_c, Q)), ("qmu_c", (M_c, K)),
                   ("qsqrt_c", (K, M_c * (M_c + 1) // 2))]
        self.packer = ParamPacker(blocks)

    # ---------------------------------------------------------------------------- packing
    def pack(self, values):
        """Flat vector from constrained values (``noise`` as the actual variances,
        ``qsqrt_*`` as full lower-triangular arrays, encoder weights as ``enc`` list)."""
        v = dict(values)
        v["noise"] = np.asarray(values["noise"]) - NOISE_FLOOR
        v["qsqrt_r"] = tril_pack(values["qsqrt_r"])
        v["qsqrt_c"] = tril_pack(values["qsqrt_c"])
        if self.encoder_shapes is not None:
            for k, w in enumerate(v.pop("enc")):
                v[f"enc{k}"] = w
        return self.packer.pack(v)

    def unpack(self, flat):
        """Dict of constrained blocks (raw packer layout)."""
        return self.packer.unpack(flat)

    def globals_(self, p):
        """:class:`Globals` from an unpacked dict (sets the working kernels' ``theta``)."""
        self.kernel_r.theta = p["theta_r"]
        self.kernel_c.theta = p["theta_c"]
        return Globals(self.kernel_r, p["Z_r"], p["qmu_r"], tril_unpack(p["qsqrt_r"], self.M_r),
                       p["noise"] + NOISE_FLOOR, self.kernel_c, p["Z_c"], p["qmu_c"],
                       tril_unpack(p["qsqrt_c"], self.M_c))

    def encoder_weights(self, p):
        """Encoder weight list of an unpacked dict."""
        return [p[f"enc{k}"] for k in range(len(self.encoder_shapes))]

    def latents(self, p, idx=None):
        """``(mu, sigma)`` of q(x_i) for rows ``idx`` (all rows when ``None``)."""
        if self.encoder_shapes is None:
            if idx is None:
                return p["mu"], p["sigma"]
            return p["mu"][idx], p["sigma"][idx]
        Y = self.Yr if idx is None else self.Yr[idx]
        mu, sigma, _ = encoder_forward(self.encoder_weights(p), Y)
        return mu, sigma

    def initial_point(self, x_init, random_state):
        """Flat starting point: latent means from PCA (``x_init="pca"``; from the Gram matrix
        for a row source) or ``N(0, I)`` draws (``"random"``).

        Standard deviations 0.1 (a project choice: the authors' code's ``softplus(N(0, 1))``
        ≈ 0.7 lets the deterministic mode collapse to flat kernels in its first L-BFGS steps);
        inducing inputs on initial latent means; ``q(u)`` near the prior; noise at a tenth of
        each column's variance (floored at 0.01); the kernels' current ``theta``. With an
        amortised q(X), a fresh encoder whose mean head reproduces the PCA start.
        """
        N, D, K, Q = self.N, self.D, self.K, self.Q
        if self.rows is None:
            column_var = self.Yr.var(axis=0)
        else:
            column_var = np.asarray(self.rows.arrays["Yr"].var(axis=0).compute())
        if x_init == "random":
            mu0 = random_state.standard_normal((N, Q))
        else:  # a dask Yr's scores come back lazy: gathered here
            mu0 = np.asarray(pca_latents(self.Yr if self.rows is None else self.rows.arrays["Yr"],
                                         Q))
        values = {"theta_r": self.kernel_r.theta, "theta_c": self.kernel_c.theta,
                  "Z_r": _initial_inducing(mu0, self.M_r, random_state),
                  "Z_c": _initial_inducing(mu0, self.M_c, random_state),
                  "qmu_r": 1e-3 * random_state.standard_normal((self.M_r, D)),
                  "qmu_c": 1e-3 * random_state.standard_normal((self.M_c, K)),
                  "qsqrt_r": np.tile(np.eye(self.M_r), (D, 1, 1)),
                  "qsqrt_c": np.tile(np.eye(self.M_c), (K, 1, 1)),
                  "noise": np.maximum(0.1 * column_var, 1e-2)}
        if self.encoder_shapes is not None:
            enc = encoder_init(self.encoder_shapes, random_state)
            values["enc"] = encoder_fit_mean_head(enc, self.Yr, mu0) if x_init == "pca" else enc
        else:
            values["mu"], values["sigma"] = mu0, np.full((N, Q), 0.1)
        return self.pack(values)

    def objectives(self, stochastic, noise_rs):
        """``full(flat)`` on all rows (sigma points) and ``minibatch(flat, idx)`` (one
        reparameterised sample per row from ``noise_rs`` when ``stochastic``, else sigma
        points): the objectives of L-BFGS-B and Adam."""
        Q, ut, idx_all = self.Q, unscented_rule(self.Q), np.arange(self.N)

        def full(flat):
            return self.value_and_grad(flat, idx_all, ut.nodes, ut.weights)

        def minibatch(flat, idx):
            if stochastic:
                nodes = noise_rs.standard_normal((idx.shape[0], 1, Q))
                return self.value_and_grad(flat, idx, nodes, np.ones(1))
            return self.value_and_grad(flat, idx, ut.nodes, ut.weights)

        return full, minibatch

    # -------------------------------------------------------------------------- objective
    def batch_source(self, idx, mu_b, sigma_b, nodes):
        """The bound and the row source of batch rows ``idx`` with their q(x_i) and nodes."""
        bound = LDGDBound(True, nodes.ndim == 3)
        arrays = local_rows(mu_b, sigma_b, nodes)
        if self.rows is not None:
            return bound, self.rows.subset(idx, arrays)
        arrays.update(Yr=self.Yr[idx], Yc=self.Yc[idx])
        return bound, InMemoryRows(arrays, chunk_rows=self.chunk_rows, prefix="ldgd")

    def value_and_grad(self, flat, idx, nodes, weights):
        """Minimised ``−L̂/N`` and its gradient for batch rows ``idx``.

        Parameters
        ----------
        flat : ndarray
            Parameters.
        idx : ndarray of int
            Batch rows (distinct).
        nodes : ndarray of shape (P, Q) or (b, P, Q)
            Unit-space nodes (``ε`` samples or sigma points).
        weights : ndarray of shape (P,)
            Node weights.

        Returns
        -------
        value : float
        grad : ndarray
        """
        w_r, w_c, gamma, beta_r, beta_c, beta_x = self.factors
        p = self.unpack(flat)
        glob = self.globals_(p)
        N = self.N
        b = idx.shape[0]
        scale = N / b
        enc_cache = None
        if self.encoder_shapes is None:
            mu_b, sigma_b = p["mu"][idx], p["sigma"][idx]
        else:
            mu_b, sigma_b, enc_cache = encoder_forward(self.encoder_weights(p), self.Yr[idx])
        bound, source = self.batch_source(idx, mu_b, sigma_b, nodes)
        params = LDGDParams(glob, None if bound.per_row_nodes else nodes, weights, scale,
                            (w_r, w_c, gamma), (beta_r, beta_c), self.jitter, self.gh_order)
        value, g = ldgd_evaluate(bound, params, source)
        grads = {"theta_r": g.theta_r, "Z_r": g.Z_r, "qmu_r": g.qmu_r,
                 "qsqrt_r": tril_pack(g.qsqrt_r), "noise": g.noise, "theta_c": g.theta_c,
                 "Z_c": g.Z_c, "qmu_c": g.qmu_c, "qsqrt_c": tril_pack(g.qsqrt_c)}
        if self.encoder_shapes is None:
            # KL_X over all N rows at every step (deterministic)
            value -= beta_x * gaussian_kl_std(p["mu"], p["sigma"])
            kmu, ksig = gaussian_kl_std_vjp(p["mu"], p["sigma"])
            dmu, dsig = -beta_x * kmu, -beta_x * ksig
            dmu[idx] += g.mu
            dsig[idx] += g.sigma
            grads["mu"], grads["sigma"] = dmu, dsig
        else:
            # amortised q(X): KL_X on the batch with the N/b scale (unbiased)
            value -= beta_x * scale * gaussian_kl_std(mu_b, sigma_b)
            kmu, ksig = gaussian_kl_std_vjp(mu_b, sigma_b)
            ew = encoder_vjp(g.mu - beta_x * scale * kmu, g.sigma - beta_x * scale * ksig,
                             enc_cache)
            for k, w in enumerate(ew):
                grads[f"enc{k}"] = w
        return -value / N, -self.packer.pack_grad(grads, p) / N

    def bounds(self):
        """``(n_params, 2)`` box bounds (kernel ``theta`` only; the rest unbounded)."""
        bounds = np.full((self.packer.size, 2), [-np.inf, np.inf])
        bounds[self.packer.slice("theta_r")] = self.kernel_r.bounds
        bounds[self.packer.slice("theta_c")] = self.kernel_c.bounds
        return bounds


class InferenceProblem:
    """Test-time q(x*) of new rows with the model fixed (Ziaei et al. 2024, §2.3.9).

    Maximises ``w_r Σ_i Σ_d E_q(x*_i)[ℓ^r_id] − β_x KL(q(X*) ‖ p(X*))``; the problem is separable
    over rows and the value is not normalised by the number of rows, so the per-row Adam
    trajectories do not depend on which other rows are in the call.

    Parameters
    ----------
    Yr : ndarray of shape (n, D)
        New rows (scaled like the training data).
    glob : Globals
        Fitted global parameters.
    w_r, beta_x : float
        Regression weight and KL_X factor of the preset.
    jitter : float
        Relative jitter on ``K_uu``.
    """

    def __init__(self, Yr, glob, w_r, beta_x, jitter):
        self.Yr, self.glob = Yr, glob
        n, Q = Yr.shape[0], glob.Z_r.shape[1]
        self.w_r, self.beta_x, self.jitter = float(w_r), float(beta_x), float(jitter)
        self.chunk_rows = None  # rows per engine chunk; None: from the problem size
        self.D = Yr.shape[1]
        self.packer = ParamPacker([("mu", (n, Q)), ("sigma", (n, Q), "softplus")])

    def start(self, mu0, sigma0):
        """Flat vector of the starting ``q(x*) = N(mu0, diag sigma0²)``."""
        return np.concatenate([mu0.ravel(), softplus_inverse(sigma0).ravel()])

    def latents(self, flat):
        """``(mu, sigma)`` of the flat vector ``flat``."""
        p = self.packer.unpack(flat)
        return p["mu"], p["sigma"]

    def objective(self, stochastic, random_state):
        """``objective(flat, idx)`` for Adam on all rows: sigma points, or when ``stochastic``
        one draw from ``random_state`` per step shared by all rows (so each row's trajectory
        does not depend on the other rows of the call)."""
        Q = self.glob.Z_r.shape[1]
        ut = unscented_rule(Q)

        def objective(flat, idx):
            if stochastic:
                return self.value_and_grad(flat, random_state.standard_normal((1, Q)),
                                           np.ones(1))
            return self.value_and_grad(flat, ut.nodes, ut.weights)

        return objective

    def value_and_grad(self, flat, nodes, weights):
        """Minimised ``−L*/D`` and its gradient (nodes shared by every row)."""
        p = self.packer.unpack(flat)
        mu, sigma = p["mu"], p["sigma"]
        value, g = ldgd_value_and_vjp(self.glob, self.Yr, None, mu, sigma, nodes, weights,
                                      factors=(self.w_r, 0.0, 0.0), jitter=self.jitter,
                                      chunk_rows=self.chunk_rows)
        value -= self.beta_x * gaussian_kl_std(mu, sigma)
        kmu, ksig = gaussian_kl_std_vjp(mu, sigma)
        grads = {"mu": g.mu - self.beta_x * kmu, "sigma": g.sigma - self.beta_x * ksig}
        return -value / self.D, -self.packer.pack_grad(grads, p) / self.D
