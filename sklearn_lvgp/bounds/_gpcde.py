"""The GPCDE model: its bound as a function of one flat parameter vector (Salimbeni 2020, §4.2).

One SVGP output layer (shared engine, :mod:`sklearn_lvgp.variational`) evaluated at
``t = [h_n, w]``, where ``h_n`` is the (optionally Bayesian-projected, §4.2.3) input and ``w`` runs
over the Gauss–Hermite nodes of the quadrature bound (§4.2.2) or over samples / sigma points of a
Gaussian ``q(w_n)`` (§4.2.1), free or amortised by a recognition network.

The bound is the one-pass protocol bound :class:`~sklearn_lvgp.bounds._gpcde_bound.CDEBound`;
:class:`CDEModel` assembles it. Its rows are the data, the rows' Monte Carlo draws and the free
``q(w_n)``; a minibatch's rows are a row source's ``subset``, in memory or where the partitions of
a Dask fit live. :meth:`CDEModel.elbo` and :meth:`CDEModel.natgrad` run it on arrays,
:meth:`CDEModel.elbo_rows` and :meth:`CDEModel.natgrad_rows` on a row source
(:class:`~sklearn_lvgp.engine.InMemoryRows` or :class:`~sklearn_lvgp.engine._dask.DaskRows`).
:class:`CDEModel` also gives the model's initial parameters (§4.2.3, §4.4) and its start from the
sparse GP it reduces to with the latent switched off; the predictive mixture is
:class:`~sklearn_lvgp.bounds._gpcde_predictive.CDEPredictive`."""


import numpy as np

from .._core.init import kmeans_inducing, principal_directions
from .._core.params import ParamPacker, softplus_inverse
from ..engine._executor import plan_chunks, serial_global_steps
from ..engine._protocol import evaluate_bound
from ..engine._rows import InMemoryRows
from ..expectations._rules import (
    gauss_hermite_rule,
    unscented_rule,
)
from ..kernels._stationary import _Stationary, default_rbf
from ..likelihoods._mixed_gaussian import latent_pi
from ..nn._cde_encoder import (
    RHO_SHIFT,
    encoder_init,
    encoder_shapes,
)
from ..variational import (
    prior_factor,
    tril_pack,
    tril_unpack,
)
from ..variational._natgrad_mixing import mixing_natgrad_update
from ._dsvi import FLOPS_PER_WORK
from ._gpcde_bound import CDEBound, CDEGlobals, CDEParams

__all__ = ["CDEBound", "CDEGlobals", "CDEModel", "CDEParams", "CHUNK_POINTS", "MIN_NOISE",
           "RHO_SHIFT"]

#: Stacked evaluation points per chunk (rows x nodes).
CHUNK_POINTS = 20000
#: Noise-variance floor.
MIN_NOISE = 1e-6


class CDEModel:
    """Structure of one GPCDE (shapes, options, kernel template); never fitted values.

    Parameters
    ----------
    kernel : Kernel
        Initialised template on ``D_h + D_w`` inputs.
    n_features, proj_dim, latent_dim, n_latent, n_targets, n_inducing : int
        ``D_x``, ``D_h`` (``None``: no projection), ``D_w``, ``L``, ``D_y``, ``M``.
    mixing : bool
        Whether ``P`` is a trained block (else the identity, ``L = D_y``).
    q_w : {"quadrature", "gaussian", "amortized"}
    expectation : {"monte_carlo", "unscented"}
    n_samples : int
        Monte Carlo samples of ``w`` per row.
    gh_order : int
        Gauss–Hermite nodes per latent dimension.
    n_rows : int
        Training rows (free ``q(w_n)``).
    encoder_hidden : tuple of int
    whiten : bool
    jitter : float
    prior_var_A : float, default=1.0
    """

    def __init__(self, kernel, n_features, proj_dim, latent_dim, n_latent, n_targets, n_inducing,
                 mixing, q_w, expectation, n_samples, gh_order, n_rows, encoder_hidden,
                 whiten, jitter, prior_var_A=1.0):
        self.kernel = kernel
        self.Dx = n_features
        self.projection = proj_dim is not None
        self.Dh = proj_dim if self.projection else n_features
        self.Dw = latent_dim
        self.L = n_latent
        self.Dy = n_targets
        self.M = n_inducing
        self.mixing = mixing
        self.q_w = q_w
        self.mode = "quadrature" if (q_w == "quadrature" or latent_dim == 0) else "gaussian"
        self.expectation = expectation
        self.S = n_samples
        self.whiten = whiten
        self.jitter = jitter
        self.prior_var_A = prior_var_A
        if self.mode == "quadrature":
            rule = gauss_hermite_rule(gh_order, latent_dim, max_points=np.inf)
            self.nodes, self.logw = rule.nodes, rule.log_weights
        elif expectation == "unscented":
            self.nodes, self.beta = unscented_rule(latent_dim)[1:]
        T = self.M * (self.M + 1) // 2
        blocks = [("q_mu", (self.M, self.L)), ("q_sqrt", (self.L, T)),
                  ("Z", (self.M, self.Dh + self.Dw)), ("theta", (kernel.n_theta,)),
                  ("noise_variance", (1,), "log")]
        if mixing:
            blocks.append(("P", (self.L, self.Dy)))
        if self.projection:
            blocks += [("A_mu", (self.Dx, self.Dh)), ("A_s", (self.Dx, self.Dh), "softplus")]
        self.enc_shapes = []
        if self.mode == "gaussian" and q_w == "gaussian":
            blocks += [("w_mean", (n_rows, self.Dw)), ("w_rho", (n_rows, self.Dw))]
        elif self.mode == "gaussian":
            self.enc_shapes = encoder_shapes(self.Dx + self.Dy, encoder_hidden, self.Dw)
            for i, (ws, bs) in enumerate(self.enc_shapes):
                blocks += [(f"enc_W{i}", ws), (f"enc_b{i}", bs)]
        self.packer = ParamPacker(blocks)

    # ------------------------------------------------------------------------- parameters
    def pack(self, values):
        """Flat vector from constrained values (``q_sqrt`` as ``(L, M, M)``)."""
        v = dict(values)
        v["q_sqrt"] = tril_pack(v["q_sqrt"])
        v["theta"] = v["kernel"].theta
        v["noise_variance"] = np.array([v["noise_variance"]])
        return self.packer.pack(v)

    def unpack(self, x):
        """Dict of constrained values, with ``kernel`` and full ``q_sqrt``."""
        p = self.packer.unpack(x)
        p["q_sqrt_full"] = tril_unpack(p["q_sqrt"], self.M)
        p["kernel"] = self.kernel.clone_with_theta(p["theta"])
        p["s2"] = float(p["noise_variance"][0])
        p["P_"] = p["P"] if self.mixing else None
        return p

    def encoder_params(self, p):
        return [p[f"enc_{k}{i}"] for i in range(len(self.enc_shapes)) for k in ("W", "b")]

    def bounds(self):
        b = np.full((self.packer.size, 2), [-np.inf, np.inf])
        b[self.packer.slice("theta")] = self.kernel.bounds
        b[self.packer.slice("noise_variance")] = [np.log(MIN_NOISE), np.inf]
        return b

    def q_mask(self):
        """Entries of ``q(u)`` (updated by natural gradients, frozen for Adam)."""
        mask = np.zeros(self.packer.size, dtype=bool)
        mask[self.packer.slice("q_mu")] = True
        mask[self.packer.slice("q_sqrt")] = True
        return mask

    @property
    def deterministic(self):
        """Whether the objective is deterministic (L-BFGS allowed)."""
        return not self.projection and (self.mode == "quadrature"
                                        or self.expectation == "unscented")

    def initial_point(self, Xs, Ys, noise_variance, random_state, n_rows=None):
        """Flat initial parameters (Salimbeni 2020, §4.2.3 and §4.4).

        Inducing inputs from k-means of the (projected) inputs with ``N(0, 1)`` latent
        coordinates, ``q(u)`` at the prior, the projection's mean on the principal directions
        of the inputs, the output mixing on those of the targets, and ``q(w_n)`` near the prior
        (or a freshly initialised recognition network); the kernel is the model's template.

        Parameters
        ----------
        Xs, Ys : ndarray of shape (n, D_x) and (n, D_y)
            Standardised inputs and targets (all training rows, or a sample of them).
        noise_variance : float
            Initial noise variance.
        random_state : numpy.random.RandomState
        n_rows : int or None, default=None
            Training rows (the free ``q(w_n)``), when ``Xs`` holds only some of them.

        Returns
        -------
        x : ndarray
        """
        N = Xs.shape[0] if n_rows is None else int(n_rows)
        Dx = Xs.shape[1]
        Dh, Dw, L, M = self.Dh, self.Dw, self.L, self.M
        values = {"kernel": self.kernel, "noise_variance": noise_variance,
                  "q_mu": np.zeros((M, L))}
        H = Xs
        if self.projection:
            values["A_mu"] = principal_directions(Xs, Dh, random_state, scaled=False)
            values["A_s"] = np.full((Dx, Dh), 1e-2)
            H = Xs @ values["A_mu"]
        Z = np.hstack([kmeans_inducing(H, M, random_state),
                       random_state.standard_normal((M, Dw))])
        values["Z"] = Z
        if self.whiten:
            values["q_sqrt"] = np.repeat(np.eye(M)[None], L, axis=0)
        else:
            Lu = prior_factor(self.kernel, Z, self.jitter).Lu
            values["q_sqrt"] = np.repeat(Lu[None], L, axis=0)
        if self.mixing:
            values["P"] = principal_directions(Ys, L, random_state).T
        if self.mode == "gaussian" and self.q_w == "gaussian":
            values["w_mean"] = 0.1 * random_state.standard_normal((N, Dw))
            values["w_rho"] = np.zeros((N, Dw))
        elif self.mode == "gaussian":
            ps = encoder_init(self.enc_shapes, random_state)
            for i in range(len(self.enc_shapes)):
                values[f"enc_W{i}"], values[f"enc_b{i}"] = ps[2 * i], ps[2 * i + 1]
        return self.pack(values)

    # ------------------------------------------------------------------------- the bound
    @property
    def bound(self):
        """The model's :class:`CDEBound`."""
        return CDEBound(self)

    @property
    def n_points(self):
        """Evaluation points ``J`` per row: quadrature nodes, sigma points or samples."""
        if self.mode == "quadrature" or self.expectation == "unscented":
            return self.nodes.shape[0]
        return self.S

    def _row_cost(self, J):
        """Work per row (in :func:`~sklearn_lvgp.engine.plan_chunks` units) and the largest
        chunk (at most ``CHUNK_POINTS`` points)."""
        M = self.M
        work = J * M * (M * (1 + self.Dy) + self.Dh + self.Dw) / FLOPS_PER_WORK
        return work, max(1, CHUNK_POINTS // J)

    def _chunk_ranges(self, n, J):
        """Row chunks: enough work each to be worth a thread, at most ``CHUNK_POINTS`` points."""
        work, max_rows = self._row_cost(J)
        return plan_chunks(n, work, max_rows=max_rows)

    def _w_shape(self):
        """Shape ``(N, D_w)`` of the free ``q(w_n)`` blocks."""
        return next(b.shape for b in self.packer.blocks if b.name == "w_mean")

    def minibatch_rows(self, x, idx, random_state=None, eps_w=None, eps_A=None):
        """The row arrays of a minibatch besides its data: its draws and its free ``q(w_n)``.

        Parameters
        ----------
        x : ndarray
            Flat parameters (the free ``q(w_n)`` of the rows ``idx`` are taken from it).
        idx : ndarray of int
            Batch row indices.
        random_state : RandomState or None
            Source of fresh draws when they are not given (``eps_A`` first, then ``eps_w``).
        eps_w : ndarray of shape (n, S, D_w) or None
            Fixed Monte Carlo noise of ``w``.
        eps_A : ndarray of shape (n, D_h) or None
            Fixed noise of the projection.

        Returns
        -------
        rows : dict of str to ndarray
            ``"eps_A"`` (with a projection), ``"eps_w"`` as ``(n, S * D_w)`` (Monte Carlo
            ``q(w_n)``), ``"w_mean"`` and ``"w_rho"`` (free ``q(w_n)``): the minibatch's rows of
            :attr:`CDEBound.row_names` other than ``"X"`` and ``"y"``.
        """
        idx = np.asarray(idx)
        n = idx.size
        rows = {}
        if self.projection:
            rows["eps_A"] = (random_state.standard_normal((n, self.Dh)) if eps_A is None
                             else eps_A)
        if self.mode == "quadrature":
            return rows
        if self.q_w == "gaussian":
            N = self._w_shape()[0]
            rows["w_mean"] = x[self.packer.slice("w_mean")].reshape(N, self.Dw)[idx]
            rows["w_rho"] = x[self.packer.slice("w_rho")].reshape(N, self.Dw)[idx]
        if self.expectation != "unscented":
            if eps_w is None:
                eps_w = random_state.standard_normal((n, self.S, self.Dw))
            elif np.shape(eps_w) != (n, self.S, self.Dw):
                raise ValueError(f"eps_w must have shape {(n, self.S, self.Dw)}, got "
                                 f"{np.shape(eps_w)}.")
            rows["eps_w"] = eps_w.reshape(n, self.S * self.Dw)
        return rows

    @serial_global_steps
    def elbo(self, x, Xb, Yb, idx, scale, random_state=None, eps_w=None, eps_A=None):
        """Minibatch bound estimate and its gradient wrt ``x`` (Salimbeni 2020, eqs. 4.5 and 4.8).

        :class:`CDEBound` on the batch rows in memory (:meth:`evaluate`).

        Parameters
        ----------
        x : ndarray
            Flat parameters.
        Xb, Yb : ndarray
            Batch inputs and targets (standardised).
        idx : ndarray of int
            Batch row indices (for free ``q(w_n)``).
        scale : float
            ``N / |B|``.
        random_state : RandomState or None
            Source of fresh ``eps`` when not given.
        eps_w : ndarray of shape (n, S, D_w) or None
            Fixed Monte Carlo noise of ``w``.
        eps_A : ndarray of shape (n, D_h) or None
            Fixed noise of the projection.

        Returns
        -------
        value : float
        grad : ndarray
        """
        rows = {"X": Xb, "y": Yb, **self.minibatch_rows(x, idx, random_state, eps_w, eps_A)}
        return self.evaluate(x, InMemoryRows(rows, prefix="cde"), idx, scale)

    def evaluate(self, x, source, idx, scale):
        """The bound and its gradient wrt ``x`` on the rows ``idx`` held by ``source``.

        Parameters
        ----------
        x : ndarray
            Flat parameters.
        source : row source
            :attr:`CDEBound.row_names` of the rows ``idx`` (in that order): an
            :class:`~sklearn_lvgp.engine.InMemoryRows`, or a
            :class:`~sklearn_lvgp.engine._dask.DaskRows` minibatch (``subset``).
        idx : ndarray of int
            Row indices of the source's rows (the free ``q(w_n)`` gradients go there).
        scale : float
            ``N / |B|``.

        Returns
        -------
        value : float
        grad : ndarray
        """
        free = self.mode == "gaussian" and self.q_w == "gaussian"
        out = evaluate_bound(self.bound, CDEParams(x, scale), source, need_local=free)
        grads = out.grads
        if free:
            gm = np.zeros(self._w_shape())
            gr = np.zeros(self._w_shape())
            np.add.at(gm, idx, out.local["w_mean"])
            np.add.at(gr, idx, out.local["w_rho"])
            grads["w_mean"], grads["w_rho"] = gm, gr
        return out.value, self.packer.pack_grad(grads, out.globals.p)

    # -------------------------------------------------------------------- natural gradient
    def natgrad(self, x, Xb, Yb, idx, scale, gamma, random_state=None, eps_w=None, eps_A=None):
        """One natural-gradient step on ``q(u)`` (Salimbeni 2020, §4.2); returns the new ``x``.

        The statistics are sums over the batch rows, in the chunks of :meth:`elbo`
        (:meth:`natgrad_on`); the draws are fresh ones from ``random_state`` unless given.
        """
        rows = {"X": Xb, "y": Yb, **self.minibatch_rows(x, idx, random_state, eps_w, eps_A)}
        return self.natgrad_on(x, InMemoryRows(rows, prefix="cde"), scale, gamma)

    @serial_global_steps
    def natgrad_on(self, x, source, scale, gamma):
        """:meth:`natgrad` on the rows of a row source (in memory or a Dask minibatch)."""
        bound = self.bound
        G = bound.prepare(CDEParams(x, scale))
        T1, Gq = source.map_reduce(bound.natgrad_stats, G, source.plan(bound, G),
                                   bound.row_names)
        p = G.p
        q_mu, q_sqrt = mixing_natgrad_update(p["q_mu"], p["q_sqrt_full"], T1, Gq,
                                             latent_pi(p["P_"], self.L), p["s2"], gamma,
                                             G.prior.Lu, self.whiten, self.jitter)
        x = x.copy()
        x[self.packer.slice("q_mu")] = q_mu.ravel()
        x[self.packer.slice("q_sqrt")] = tril_pack(q_sqrt).ravel()
        return x

    # ---------------------------------------------------------------- on a row source
    def _batch(self, x, rows, idx, random_state):
        """The rows ``idx`` of a row source (``None``: all) with their draws and free
        ``q(w_n)`` (:meth:`minibatch_rows`), and their indices."""
        at = np.arange(rows.n_rows) if idx is None else np.asarray(idx)
        return rows.subset(idx, self.minibatch_rows(x, at, random_state)), at

    @serial_global_steps
    def elbo_rows(self, x, rows, idx, scale, random_state):
        """:meth:`elbo` on the rows ``idx`` (``None``: all) of a row source of ``"X"`` and
        ``"y"`` (:class:`~sklearn_lvgp.engine.InMemoryRows` or
        :class:`~sklearn_lvgp.engine._dask.DaskRows`: a partition's rows are evaluated where it
        lives), with fresh draws from ``random_state``."""
        source, idx = self._batch(x, rows, idx, random_state)
        return self.evaluate(x, source, idx, scale)

    def natgrad_rows(self, x, rows, idx, scale, gamma, random_state):
        """:meth:`natgrad` on the rows ``idx`` (``None``: all) of a row source."""
        source, _ = self._batch(x, rows, idx, random_state)
        return self.natgrad_on(x, source, scale, gamma)

    def objectives(self, rows, random_state):
        """The optimisers' objectives on a row source of ``N`` rows.

        Returns
        -------
        full : callable
            ``full(x) -> (-bound, -gradient)`` on all rows.
        minibatch : callable
            ``minibatch(x, idx)``: the same on the rows ``idx``, scaled by ``N / |idx|``.
        natgrad : callable
            ``natgrad(x, idx, gamma)``: a natural-gradient step of ``q(u)`` on the rows ``idx``.
        """
        N = rows.n_rows

        def full(x):
            f, g = self.elbo_rows(x, rows, None, 1.0, random_state)
            return -f, -g

        def minibatch(x, idx):
            f, g = self.elbo_rows(x, rows, idx, N / idx.size, random_state)
            return -f, -g

        def natgrad(x, idx, gamma):
            return self.natgrad_rows(x, rows, idx, N / idx.size, gamma, random_state)

        return full, minibatch, natgrad

    def mean_bound(self, x, rows, random_state, n_eval=5):
        """The bound at ``x`` on all rows of a row source (the mean of ``n_eval`` estimates
        when it is sampled)."""
        n = 1 if self.deterministic else n_eval
        return float(np.mean([self.elbo_rows(x, rows, None, 1.0, random_state)[0]
                              for _ in range(n)]))

    # ------------------------------------------------------------ the switched-off start
    @staticmethod
    def can_switch_off(kernel, latent_dim, projection, mixing):
        """Whether a model's latent can be switched off through its length scales: a latent,
        no input projection or output mixing, and (``kernel`` the template; ``None``: the
        default RBF) a stationary ARD kernel with free length-scale bounds."""
        return (latent_dim >= 1 and not projection and not mixing
                and (kernel is None or isinstance(kernel, _Stationary)
                     and np.ndim(kernel.length_scale) == 1
                     and not isinstance(kernel.length_scale_bounds, str)))

    def noise_only(self, x):
        """Whether the signal variance of a stationary kernel sits at its lower bound at
        ``x``: the model then explains the targets by the noise alone."""
        kernel = self.unpack(x)["kernel"]
        if not isinstance(kernel, _Stationary) or isinstance(kernel.variance_bounds, str):
            return False
        return bool(np.log(kernel.variance) <= np.log(kernel.variance_bounds[0]) + 1e-6)

    def switched_off_start(self, x0, rows, random_state, fit_sparse_gp, user_kernel):
        """The starts of ``init="gp"``: fit the model with its latent switched off, then start
        from it.

        The switched-off model is a sparse variational GP on the inputs alone: its bound is the
        full model's with the latent length scales at their upper bound and ``q(w)`` the prior.
        With ``q(u)`` at its optimum that bound is the collapsed bound (Titsias 2009, eq. 9), so
        the model is fitted as a sparse GP regression on it, from two starts, keeping the
        higher bound: the model's own (its kernel on the input columns, its noise variance,
        the input columns of its ``Z``) and the sparse GP regressor's (unit length scales and
        variance in standardised units, or the user's kernel; noise 0.1). ``q(u)`` is then set
        to its optimum by one natural-gradient step of size one (three for the full model's
        start).

        Parameters
        ----------
        x0 : ndarray
            Initial flat parameters (a stationary ARD kernel, no projection or mixing).
        rows : row source
            The standardised ``"X"`` and ``"y"``, in memory or on Dask.
        random_state : numpy.random.RandomState
            Draws of the natural-gradient steps and of the bound.
        fit_sparse_gp : callable
            ``fit_sparse_gp(kernel, noise_variance, Z)``: the collapsed bound of ``rows``
            maximised from that start (e.g.
            :func:`~sklearn_lvgp.optim._collapsed_fit.fit_collapsed_rows`), returning an
            object with ``kernel``, ``Z``, ``noise_variance`` and ``bound``.
        user_kernel : bool
            Whether the kernel is the user's (the regressor's start then keeps it).

        Returns
        -------
        x_start : ndarray
            The full model started from the sparse GP solution (latent length scales at their
            initial value, latent ``Z`` columns kept).
        x_off : ndarray
            The switched-off point (latent length scales at their upper bound, ``q(w)`` the
            prior), whose bound equals the sparse GP's.
        bound_off : float
            That bound.
        """
        p = self.unpack(x0)
        kernel, Dh, Dw = p["kernel"], self.Dh, self.Dw
        ls = np.asarray(kernel.length_scale, dtype=np.float64)
        k0 = kernel.clone()
        k0.set_params(length_scale=ls[:Dh].copy())
        off = CDEModel(k0, self.Dx, None, 0, self.L, self.Dy, self.M, False, "quadrature",
                       self.expectation, self.S, 1, rows.n_rows, (), self.whiten, self.jitter)
        # the collapsed bound has several optima and neither start reaches the best one on all
        # data; the regressor's start is written out in standardised units so that it does
        # not depend on the last bits of the scaled data
        starts = [(k0, p["s2"]), (k0 if user_kernel else default_rbf(np.ones(Dh), 1.0), 0.1)]
        gp = max((fit_sparse_gp(kern, noise, p["Z"][:, :Dh]) for kern, noise in starts),
                 key=lambda g: g.bound)
        lo, hi = k0.bounds.T
        xo = off.pack({"kernel": k0.clone_with_theta(np.clip(gp.kernel.theta, lo, hi)),
                       "noise_variance": max(gp.noise_variance, MIN_NOISE), "q_mu": p["q_mu"],
                       "q_sqrt": (np.repeat(np.eye(self.M)[None], self.L, axis=0)
                                  if self.whiten else p["q_sqrt_full"]),
                       "Z": np.array(gp.Z, copy=True)})
        po = off.unpack(off.natgrad_rows(xo, rows, None, 1.0, 1.0, random_state))
        log_hi = kernel.bounds[-Dw:, 1]  # length scales are the last theta entries

        def full(latent_ls):
            k = po["kernel"].clone()
            k.set_params(length_scale=np.r_[po["kernel"].length_scale, latent_ls])
            values = self.unpack(x0)
            values.update(kernel=k, noise_variance=po["s2"], q_mu=po["q_mu"],
                          q_sqrt=po["q_sqrt_full"], Z=np.hstack([po["Z"], p["Z"][:, Dh:]]))
            return values

        v_start = full(ls[Dh:])
        v_off = full(np.exp(log_hi))
        if self.mode == "gaussian":
            rho0 = RHO_SHIFT + softplus_inverse(1.0)  # q(w_n) = N(0, I) = p(w_n)
            if self.q_w == "gaussian":
                v_off["w_mean"] = np.zeros_like(v_off["w_mean"])
                v_off["w_rho"] = np.full_like(v_off["w_rho"], rho0)
            else:
                last = len(self.enc_shapes) - 1
                v_off[f"enc_W{last}"] = np.zeros_like(v_off[f"enc_W{last}"])
                v_off[f"enc_b{last}"] = np.r_[np.zeros(Dw), np.full(Dw, rho0)]
        x_start = self.pack(v_start)
        for _ in range(3):
            x_start = self.natgrad_rows(x_start, rows, None, 1.0, 1.0, random_state)
        x_off = self.natgrad_rows(self.pack(v_off), rows, None, 1.0, 1.0, random_state)
        bound_off = float(self.elbo_rows(x_off, rows, None, 1.0, random_state)[0])
        return x_start, x_off, bound_off
