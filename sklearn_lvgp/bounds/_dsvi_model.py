"""The DSVI model of :class:`~sklearn_lvgp.DeepGP`: parameter packing, the bound, prediction.

Doubly-stochastic variational inference for deep GPs (Salimbeni & Deisenroth 2017,
:cite:`salimbeni2017doubly`); the layers are the SVGP engine of :mod:`sklearn_lvgp.variational`
and the bound (:class:`sklearn_lvgp.bounds._dsvi.DSVIBound`) is evaluated chunk by chunk, in
memory (:meth:`_DSVI.elbo`) or on Dask partitions (:meth:`_DSVI.evaluate`): :class:`_DSVI`
supplies its global terms, a chunk's forward and backward pass and the reduction.
:class:`sklearn_lvgp.bounds._iwvi.LatentDSVI` extends it with latent covariates.
"""

import numpy as np
from scipy.special import logsumexp

from .._core.blocks import row_blocks
from .._core.linalg import cho_solve, cholesky_jitter, solve_lower, solve_upper
from .._core.params import ParamPacker, softplus_inverse
from .._core.workspace import Workspace
from ..engine._rows import InMemoryRows
from ..expectations._rules import expand_points_vjp, reparameterise, reparameterise_vjp
from ..likelihoods._gaussian import (
    gaussian_expectation,
    gaussian_expectation_vjp,
    gaussian_log_density,
)
from ..variational import (
    SVGPLayer,
    kl_divergence,
    layer_forward,
    layer_global_vjp,
    marginals,
    marginals_vjp,
    natgrad_from_statistics,
    natgrad_statistics,
    prior_factor,
    tril_pack,
    tril_unpack,
)
from ._dsvi import (
    FLOPS_PER_WORK,
    BoundParams,
    DSVIBound,
    DSVIGlobals,
    draws_to_rows,
    evaluate_minibatch,
    from_row_layout,
    propagate_layers,
)
from ._dsvi_likelihood import data_term, natgrad_sums, path_log_density, safe_natgrad_gamma

__all__ = ["_DSVI", "layer_joint",
           "DELTA", "MIN_NOISE"]

#: Variance floor of the reparameterised samples, h = mu + eps sqrt(v + delta)
#: (Salimbeni 2020, eqs. 2.10-2.18).
DELTA = 1e-6
#: Noise-variance floor of the softplus-mapped positive parameters (GPflow 1.x convention).
MIN_NOISE = 1e-6


class _DSVI:
    """The DSVI bound of a fixed architecture as a function of one flat parameter vector.

    Holds only structure (kernel templates, fixed mean functions, shapes), never fitted values.
    """

    #: Name of the in-memory chunks' workspaces.
    _rows_prefix = "dsvi"
    #: The final layer's likelihood object (its ``theta`` the block ``likelihood``), or
    #: ``None``: the Gaussian of the block ``noise_variance`` (models pickled before the
    #: likelihood objects have no attribute of their own).
    likelihood = None

    def __init__(self, kernels, means, dims, n_inducing, whiten, jitter, expectation,
                 positive_transform="softplus", likelihood=None):
        self.kernels = kernels
        self.means = means
        self.dims = dims  # D_0, ..., D_L
        self.M = n_inducing
        self.whiten = whiten
        self.jitter = jitter
        self.expectation = expectation
        self.softplus = positive_transform == "softplus"
        self.delta = DELTA
        self.chunk_rows = None  # rows per engine chunk; None: from the problem size
        # which kernel theta entries are positive values (mapped by softplus or log)
        self.pos_mask = [np.concatenate(
            [np.full(h.n_elements, h.transform == "log") for h in k.hyperparameters
             if not h.fixed] or [np.zeros(0, dtype=bool)]) for k in kernels]
        pos = "softplus" if self.softplus else "identity"
        blocks = []
        T = n_inducing * (n_inducing + 1) // 2
        for ell, mask in enumerate(self.pos_mask):
            blocks += [(f"q_mu{ell}", (n_inducing, dims[ell + 1])),
                       (f"q_sqrt{ell}", (dims[ell + 1], T)),
                       (f"Z{ell}", (n_inducing, dims[ell])),
                       (f"pos{ell}", (int(mask.sum()),), pos),
                       (f"free{ell}", (int((~mask).sum()),))]
        if likelihood is None:
            blocks.append(("noise_variance", (1,), "softplus" if self.softplus else "log"))
        else:
            self.likelihood = likelihood
            blocks.append(("likelihood", (likelihood.n_theta,)))
        self.packer = ParamPacker(blocks)

    @property
    def n_layers(self):
        return len(self.kernels)

    @property
    def n_draw_layers(self):
        """Inner layers whose outputs are sampled (Monte Carlo with more than one layer)."""
        return self.n_layers - 1 if self.expectation == "monte_carlo" else 0

    def inner_samples(self, n_samples):
        """Samples per row through the inner layers: ``n_samples``, or 1 without sampled layers."""
        return int(n_samples) if self.n_draw_layers else 1

    def points_per_row(self, n_samples):
        """Stacked points of a row in a pass: its samples, or the sigma points of the widest
        inner layer (unscented)."""
        if self.expectation == "monte_carlo":
            return n_samples
        return 2 * max(self.dims[1:self.n_layers]) if self.n_layers > 1 else 1

    def work_per_row(self, n_points):
        """Relative work of one minibatch row pushed through the layers at ``n_points`` stacked
        points (the chunk plan's estimate, :func:`~sklearn_lvgp.engine._executor.plan_chunks`)."""
        M = self.M
        dims = self.dims
        flops = sum(M * M * (1 + dims[ell + 1]) + M * dims[ell] for ell in range(self.n_layers))
        return n_points * flops / FLOPS_PER_WORK

    # ------------------------------------------------------------------ parameters <-> layers
    def _theta_values(self, ell, theta):
        """Kernel ``theta`` (log space) to the values of blocks ``pos`` and ``free``.

        With ``softplus`` the ``pos`` block holds the positive hyperparameters themselves and the
        optimiser works on ``softplus^{-1}`` of them (GPflow 1.x convention); otherwise it holds
        their logarithms (the kernels' own ``theta``).
        """
        mask = self.pos_mask[ell]
        pos = theta[mask]
        return {f"pos{ell}": np.exp(pos) if self.softplus else pos, f"free{ell}": theta[~mask]}

    def _theta_from(self, ell, p):
        mask = self.pos_mask[ell]
        theta = np.empty(mask.size)
        theta[mask] = np.log(p[f"pos{ell}"]) if self.softplus else p[f"pos{ell}"]
        theta[~mask] = p[f"free{ell}"]
        return theta

    def _theta_grads(self, ell, dtheta, p):
        mask = self.pos_mask[ell]
        dpos = dtheta[mask] / p[f"pos{ell}"] if self.softplus else dtheta[mask]
        return {f"pos{ell}": dpos, f"free{ell}": dtheta[~mask]}

    def _layer_values(self, layers, noise_variance):
        """Named blocks of the layers and the noise variance, or the likelihood object's
        ``theta`` (the encoder adds its own, LatentDSVI)."""
        values = ({"noise_variance": np.array([noise_variance])} if self.likelihood is None
                  else {"likelihood": noise_variance.theta})
        for ell, layer in enumerate(layers):
            values[f"q_mu{ell}"] = layer.q_mu
            values[f"q_sqrt{ell}"] = tril_pack(layer.q_sqrt)
            values[f"Z{ell}"] = layer.Z
            values.update(self._theta_values(ell, layer.kernel.theta))
        return values

    def pack(self, layers, noise_variance):
        return self.packer.pack(self._layer_values(layers, noise_variance))

    def unpack(self, x):
        p = self.packer.unpack(x)
        layers = [SVGPLayer(self.kernels[ell].clone_with_theta(self._theta_from(ell, p)),
                            p[f"Z{ell}"], p[f"q_mu{ell}"],
                            tril_unpack(p[f"q_sqrt{ell}"], self.M), self.means[ell],
                            self.whiten)
                  for ell in range(self.n_layers)]
        if self.likelihood is None:
            return layers, float(p["noise_variance"][0]), p
        return layers, self.likelihood.clone_with_theta(p["likelihood"]), p

    def with_theta(self, x, ell, theta):
        """A copy of ``x`` with layer ``ell``'s kernel ``theta`` (log space) replaced."""
        p = self.packer.unpack(x)
        p.update(self._theta_values(ell, np.asarray(theta, dtype=np.float64)))
        return self.packer.pack(p)

    def bounds(self):
        b = np.full((self.packer.size, 2), [-np.inf, np.inf])
        for ell, k in enumerate(self.kernels):
            kb = k.bounds
            mask = self.pos_mask[ell]
            pos = kb[mask]
            if self.softplus:
                with np.errstate(divide="ignore", over="ignore"):
                    pos = softplus_inverse(np.exp(pos))
            b[self.packer.slice(f"pos{ell}")] = pos
            b[self.packer.slice(f"free{ell}")] = kb[~mask]
        if self.likelihood is not None:
            b[self.packer.slice("likelihood")] = self.likelihood.bounds
            return b
        b[self.packer.slice("noise_variance")] = (
            [float(softplus_inverse(MIN_NOISE)), np.inf] if self.softplus
            else [np.log(MIN_NOISE), np.inf])
        return b

    def last_q_mask(self):
        mask = np.zeros(self.packer.size, dtype=bool)
        last = self.n_layers - 1
        mask[self.packer.slice(f"q_mu{last}")] = True
        mask[self.packer.slice(f"q_sqrt{last}")] = True
        return mask

    # ---------------------------------------------------------------------------- forward
    def propagate(self, layers, X, n_samples, random_state=None, eps=None, with_kl=True,
                  expectation=None, workspaces=None):
        """Push ``X`` through the layers; returns the last layer's marginals and a tape.

        Monte Carlo (Salimbeni 2020, eqs. 2.10-2.18): ``S`` stacked copies of ``X``
        (sample-major), inner layers sampled with ``eps`` (drawn from ``random_state`` when not
        given). Unscented: each inner layer's Gaussian marginals are moment-matched and pushed
        through the next layer at the ``2 D`` sigma points of
        :func:`~sklearn_lvgp.expectations.unscented_rule`.

        ``expectation`` overrides the model's rule (``sample_y`` always samples).
        ``workspaces`` (one :class:`~sklearn_lvgp._core.workspace.Workspace` per layer, or
        ``None``) lets a training loop reuse the layers' large buffers from step to step; the
        tape is then valid until the next call with the same workspaces.

        Returns
        -------
        mu, var : ndarray of shape (P, D_L)
            Last-layer marginals at the ``P`` stacked points.
        point_weights : ndarray of shape (P,)
            Weight of each stacked point in an average over a data row (sums to 1 per row).
        kl : float
            Sum of the layers' KL terms.
        tape : list
            Per layer ``(cache, step, moment_match)`` (see
            :func:`~sklearn_lvgp.bounds._dsvi.propagate_layers`), for a backward pass.
        """
        L = self.n_layers
        ws = [None] * L if workspaces is None else workspaces
        kl_total = 0.0

        def evaluate(ell, H):
            nonlocal kl_total
            mu, var, kl, cache = layer_forward(layers[ell], H, self.jitter, with_kl, ws[ell])
            kl_total += kl
            return mu, var, cache

        def draw(ell, shape):
            return random_state.standard_normal(shape) if eps is None else eps[ell]

        rule = expectation or self.expectation
        S = n_samples if L > 1 else 1
        mu, var, weights, tape = propagate_layers(evaluate, X, L, rule, S, draw, DELTA)
        return mu, var, weights, kl_total, tape

    # ----------------------------------------------------------------------------- bound
    def bound(self):
        """The protocol bound of this architecture
        (:class:`~sklearn_lvgp.bounds._dsvi.DSVIBound`)."""
        return DSVIBound(self)

    def global_terms(self, params):
        """The global terms of an evaluation at :class:`~sklearn_lvgp.bounds._dsvi.BoundParams`
        ``params``: the layers, their prior factors and KL terms."""
        layers, noise, values = self.unpack(params.x)
        priors = [prior_factor(layer.kernel, layer.Z, self.jitter) for layer in layers]
        kls = [kl_divergence(layer.q_mu, layer.q_sqrt, prior.Lu, layer.whiten)
               for layer, prior in zip(layers, priors, strict=True)]
        return DSVIGlobals(layers, noise, values, priors, kls, params.scale,
                           self.inner_samples(params.n_samples), params.workspaces)

    def chunk_eps(self, rows, S):
        """A chunk's draws per inner layer, ``(S·m, D_ℓ+1)`` (sample-major), from its row
        arrays ``eps0``, ... (:func:`~sklearn_lvgp.bounds._dsvi.from_row_layout`)."""
        return [from_row_layout(rows[f"eps{ell}"], S, self.dims[ell + 1])
                for ell in range(self.n_draw_layers)]

    def _chunk_propagate(self, layers, priors, X, S, eps, workspaces):
        """A chunk's rows through the layers with its draws ``eps`` (the global terms' prior
        factors): the marginals of :func:`~sklearn_lvgp.bounds._dsvi.propagate_layers`."""

        def evaluate(ell, H):
            layer = layers[ell]
            return marginals(layer.kernel, layer.Z, layer.q_mu, layer.q_sqrt, H, priors[ell].Lu,
                             layer.mean_function, layer.whiten, workspaces[ell])

        return propagate_layers(evaluate, X, self.n_layers, self.expectation, S,
                                lambda ell, shape: eps[ell], self.delta)

    def chunk_pass(self, layers, priors, noise, X, Y, scale, S, eps, workspaces):
        """Forward and backward of one chunk's data term: ``(data, dnoise, per-layer partials)``.

        ``eps`` holds the chunk's Monte Carlo draws per inner layer (sample-major rows).
        """
        L = self.n_layers
        m = X.shape[0]
        mu, var, weights, tape = self._chunk_propagate(layers, priors, X, S, eps, workspaces)
        Yt = (np.tile(Y, (S, 1)) if self.expectation == "monte_carlo"
              else np.repeat(Y, weights.size // m, axis=0))
        if self.likelihood is None:
            pw = (scale * weights)[:, None]
            data = float(np.sum(pw * gaussian_expectation(Yt, mu, var, noise)))
            gv = gaussian_expectation_vjp(pw, Yt, mu, var, noise)
            dmu, dvar, dnoise = gv.mu, gv.var, float(gv.noise_variance)
        else:
            data, dmu, dvar, dnoise = data_term(noise, Yt, mu, var, scale * weights)
        partials = [None] * L
        for ell in range(L - 1, -1, -1):
            mcache, step, mm = tape[ell]
            if mm is not None:
                # moment matching: mean = sum_k w mu_k, var = sum_k w (v_k + (mu_k - mean)^2)
                w, dev = mm
                dmu = (w * dmu[:, None, :] + 2.0 * w * dev * dvar[:, None, :]).reshape(
                    -1, dev.shape[2])
                dvar = np.ascontiguousarray(
                    np.broadcast_to(w * dvar[:, None, :], dev.shape)).reshape(-1, dev.shape[2])
            mv = marginals_vjp(dmu, dvar, mcache)
            partials[ell] = (mv.q_mu, mv.q_sqrt, mv.Z, mv.theta, mv.Lu)
            if step is None:
                continue
            if step[0] == "mc":
                # h = mu + eps sqrt(v + delta) (Salimbeni & Deisenroth 2017, eq. 7)
                _, e, sd = step
                dmu, dvar = reparameterise_vjp(mv.H, e, sd)
            else:
                _, rule, sd = step
                dmu, dvar = expand_points_vjp(mv.H.reshape(sd.shape[0], rule.n_points, -1),
                                              rule.nodes, sd)
        return data, dnoise, tuple(partials)

    def _global_vjp(self, layer, prior, kl_cache, part):
        """Adjoints of a layer's q(u), Z and θ from its reduced chunk partials and its KL."""
        return layer_global_vjp(layer.kernel, prior, kl_cache, -1.0, *part)

    def _layer_grads(self, G, parts):
        """Gradients of the layers' named blocks (the KL and prior-factor backward passes)."""
        grads = {}
        for ell, layer in enumerate(G.layers):
            dq_mu, dq_sqrt, dZ, dtheta = self._global_vjp(layer, G.priors[ell], G.kls[ell][1],
                                                          parts[ell])
            grads[f"q_mu{ell}"] = dq_mu
            grads[f"q_sqrt{ell}"] = tril_pack(dq_sqrt)
            grads[f"Z{ell}"] = dZ
            grads.update(self._theta_grads(ell, dtheta, G.values))
        return grads

    def finish(self, G, partials):
        """Value and flat gradient from the reduced chunk partials and the global terms."""
        data, dnoise, parts = partials
        grads = self._layer_grads(G, parts)
        if self.likelihood is None:
            grads["noise_variance"] = np.array([dnoise])
        else:
            grads["likelihood"] = dnoise
        return data - sum(kl for kl, _ in G.kls), self.packer.pack_grad(grads, G.values)

    def _layer_draws(self, n, n_samples, random_state):
        """The Monte Carlo draws of an ``n``-row minibatch, in the unchunked order (or
        ``None``)."""
        L = self.n_layers
        if self.expectation != "monte_carlo" or L == 1:
            return None
        return [random_state.standard_normal((n_samples * n, self.dims[ell + 1]))
                for ell in range(L - 1)]

    def draw_rows(self, n, n_samples, random_state, eps=None):
        """The Monte Carlo draws of an ``n``-row minibatch as the row arrays ``eps0``, ... of
        :meth:`bound`: ``eps`` (one ``(S·n, D_ℓ+1)`` array per inner layer, sample-major), or
        drawn from ``random_state`` in the unchunked order."""
        S = self.inner_samples(n_samples)
        return draws_to_rows(self._layer_draws(n, S, random_state) if eps is None else eps,
                             n, S)

    def elbo(self, x, X, Y, scale, n_samples, random_state=None, eps=None, workspaces=None):
        """Minibatch ELBO estimate (Salimbeni 2020, eq. 2.19) and its gradient wrt ``x``.

        :meth:`bound` over the rows ``X``, ``Y`` (``scale`` is ``N / |B|``) and their draws
        (:meth:`draw_rows`), in memory: rows in parallel chunks of :attr:`chunk_rows` (``None``:
        from the problem size, never from the thread count), bit-identical for any number of
        threads. ``workspaces`` (one :class:`~sklearn_lvgp._core.workspace.Workspace` per
        layer) are reused across calls by a single-chunk evaluation; the result does not
        depend on them.
        """
        rows = InMemoryRows({"X": X, "y": Y,
                             **self.draw_rows(X.shape[0], n_samples, random_state, eps)},
                            chunk_rows=self.chunk_rows, prefix=self._rows_prefix)
        return evaluate_minibatch(self.bound(), BoundParams(x, scale, n_samples, workspaces),
                                  rows)

    def evaluate(self, x, source, scale, n_samples):
        """Minibatch ELBO estimate and its gradient wrt ``x`` over the rows of a row source.

        ``source`` holds the rows of :meth:`bound` (``X``, ``y`` and the draws of
        :meth:`draw_rows`): e.g. a :class:`~sklearn_lvgp.engine._dask.DaskRows` minibatch
        (``rows.subset(idx, extra=draws)``), whose partitions evaluate their rows where they
        live.
        """
        return evaluate_minibatch(self.bound(), BoundParams(x, scale, n_samples), source)

    def natgrad(self, x, X, Y, scale, n_samples, gamma, random_state):
        """One closed-form natural-gradient step on the last layer's q(u) (Salimbeni 2020, ch. 3).

        The inner layers are propagated exactly as in :meth:`elbo` (fresh samples or sigma
        points); the last layer's features ``A`` and ``L_u`` at those inputs come from the tape.
        """
        layers, noise, _ = self.unpack(x)
        mu, var, w, _, tape = self.propagate(layers, X, n_samples, random_state, with_kl=False)
        _, prior, mcache, _ = tape[-1][0]
        sums = self._natgrad_sums(layers[-1], mcache, Y, scale * w, noise, mu, var)
        return self._natgrad_update(x, layers[-1], sums, gamma, prior.Lu)

    def _natgrad_sums(self, last, mcache, Y, point_weights, noise, mu, var):
        """The data sums of the step (:func:`~sklearn_lvgp.variational.natgrad_statistics`,
        or :func:`~sklearn_lvgp.bounds._dsvi_likelihood.natgrad_sums` for a likelihood object)
        at the last layer's stacked points (marginals ``mu``, ``var``) of rows ``Y``."""
        reps = point_weights.size // Y.shape[0]
        Yt = np.repeat(Y, reps, axis=0) if self.expectation == "unscented" else np.tile(
            Y, (reps, 1))
        if self.likelihood is not None:
            return natgrad_sums(noise, mcache.A, last.q_mu, Yt, mu, var, point_weights)
        return natgrad_statistics(mcache.A, Yt - last.mean_function(mcache.H), point_weights,
                                  noise)

    def _natgrad_update(self, x, last, sums, gamma, Lu):
        """``x`` with the last layer's q(u) moved by the step of data sums ``sums``."""
        if self.likelihood is not None:
            prior_prec = np.eye(self.M) if self.whiten else cho_solve(Lu, np.eye(self.M))
            gamma = safe_natgrad_gamma(last.q_sqrt, sums[1], gamma, prior_prec)
        q_mu, q_sqrt = natgrad_from_statistics(last.q_mu, last.q_sqrt, *sums, gamma, Lu,
                                               self.whiten)
        x = x.copy()
        ell = self.n_layers - 1
        x[self.packer.slice(f"q_mu{ell}")] = q_mu.ravel()
        x[self.packer.slice(f"q_sqrt{ell}")] = tril_pack(q_sqrt).ravel()
        return x

    def natgrad_chunk(self, G, rows, ctx):
        """One chunk's data sums of the natural-gradient step (rows as :meth:`bound`'s)."""
        mu, var, weights, tape = self._chunk_propagate(G.layers, G.priors, rows["X"], G.S,
                                                       self.chunk_eps(rows, G.S),
                                                       [None] * self.n_layers)
        return self._natgrad_sums(G.layers[-1], tape[-1][0], rows["y"], G.scale * weights,
                                  G.noise, mu, var)

    def natgrad_rows(self, x, source, scale, n_samples, gamma):
        """:meth:`natgrad` on the rows of a row source (``X``, ``y`` and the draws of
        :meth:`draw_rows`; e.g. a Dask minibatch ``rows.subset(idx, extra=draws)``): the
        chunks' data sums (:meth:`natgrad_chunk`), added in chunk order, then the step."""
        G = self.global_terms(BoundParams(x, scale, n_samples))
        bound = self.bound()
        sums = source.map_reduce(self.natgrad_chunk, G, source.plan(bound, G), bound.row_names)
        return self._natgrad_update(x, G.layers[-1], sums, gamma, G.priors[-1].Lu)

    def predict_components(self, x, X, n_samples, eps_rows):
        """Per-path last-layer marginals ``(S, n, D)`` (Monte Carlo) or ``(1, n, D)`` (UT)."""
        layers, noise, _ = self.unpack(x)
        n = X.shape[0]
        if self.expectation == "monte_carlo" and self.n_layers > 1:
            S = n_samples
            eps = [np.repeat(e[:S], n, axis=0) for e in eps_rows]
            mu, var, _, _, _ = self.propagate(layers, X, S, eps=eps, with_kl=False)
            D = mu.shape[1]
            return mu.reshape(S, n, D), var.reshape(S, n, D), noise
        mu, var, w, _, _ = self.propagate(layers, X, 1, with_kl=False)
        if self.expectation == "unscented" and self.n_layers > 1:
            K = mu.shape[0] // n
            mk = mu.reshape(n, K, -1)
            wk = w.reshape(n, K)[:, :, None]
            m = np.sum(wk * mk, axis=1)
            v = np.sum(wk * (var.reshape(n, K, -1) + (mk - m[:, None, :]) ** 2), axis=1)
            mu, var = m, v
        return mu[None], var[None], noise

    # ------------------------------------------------------------------------ prediction
    def _gaussian_only(self, what):
        if self.likelihood is not None:
            raise ValueError(f"{what} needs the default Gaussian likelihood (likelihood=None), "
                             f"not {type(self.likelihood).__name__}.")

    def path_components(self, x, Xs, paths):
        """Last-layer means and variances along every path, ``(S, n, D)``, and the noise."""
        S, eps = paths
        mus, vs = [], []
        for rows in row_blocks(Xs.shape[0], S):
            mu, var, noise = self.predict_components(x, Xs[rows], S, eps)
            mus.append(mu)
            vs.append(var)
        return np.concatenate(mus, axis=1), np.concatenate(vs, axis=1), noise

    def mean_log_density(self, x, X, Y, paths):
        """Mean log predictive density of standardised rows along fixed paths (early
        stopping)."""
        mu, var, noise = self.predict_components(x, X, *paths)
        if self.likelihood is not None:
            return float(np.mean(path_log_density(noise, mu, var, Y)))
        lp = gaussian_log_density(Y[None], mu, var + noise).sum(axis=2)
        return float(np.mean(logsumexp(lp, axis=0) - np.log(lp.shape[0])))

    def sample(self, x, Xs, n_samples, rs):
        """Draws of the (standardised) outputs at ``Xs``: Monte Carlo through the layers, noise
        included; shape ``(n, D, n_samples)``."""
        self._gaussian_only("sampling the outputs")
        layers, noise, _ = self.unpack(x)
        mu, var, _, _, _ = self.propagate(layers, Xs, n_samples, rs, with_kl=False,
                                          expectation="monte_carlo")
        n, D = Xs.shape[0], mu.shape[1]
        mu, var = mu.reshape(-1, n, D), var.reshape(-1, n, D)
        if mu.shape[0] == 1:
            mu, var = np.repeat(mu, n_samples, axis=0), np.repeat(var, n_samples, axis=0)
        f = reparameterise(mu, np.sqrt(var + noise), rs.standard_normal(mu.shape))
        return np.transpose(f, (1, 2, 0))

    def joint_predictive(self, x, Xs, n_paths, random_state):
        """Mean ``(n, D)`` and covariance ``(n, n, D)`` of the outputs at the rows of ``Xs``.

        The inner layers are sampled jointly over the rows (one Gaussian draw of all rows per
        path and layer, variance floor ``DELTA`` as in training), so two rows covary through
        every layer; the last layer's joint moments are averaged over ``n_paths`` paths (law
        of total covariance), and the noise is added on the diagonal. With one layer it is
        exact.
        """
        self._gaussian_only("the joint predictive covariance")
        layers, noise, _ = self.unpack(x)
        n = Xs.shape[0]
        means, covs = [], []
        for _ in range(n_paths if len(layers) > 1 else 1):
            H = Xs
            for layer in layers[:-1]:
                m, C = layer_joint(layer, H, self.jitter)
                draws = random_state.standard_normal((n, m.shape[1]))
                H = m + np.column_stack([
                    cholesky_jitter(C[d] + DELTA * np.eye(n), 1e-10,
                                    name="hidden-layer covariance", warn=False)[0] @ draws[:, d]
                    for d in range(m.shape[1])])
            m, C = layer_joint(layers[-1], H, self.jitter)
            means.append(m)
            covs.append(C)
        M = np.stack(means)
        mean = M.mean(axis=0)
        dev = M - mean
        cov = (np.mean(covs, axis=0).transpose(1, 2, 0)
               + np.einsum("sid,sjd->ijd", dev, dev) / len(M))
        cov[np.arange(n), np.arange(n), :] += noise
        return mean, cov

    # ------------------------------------------------------------------------- training
    def objectives(self, Xs, Ys, n_total, n_samples, rs, rows=None):
        """The optimiser's three callables for one fit call.

        The full-batch negated bound and gradient, its minibatch estimate and the last layer's
        natural-gradient step on a minibatch, of the rows ``Xs``, ``Ys`` in memory or of a row
        source ``rows`` (a :class:`~sklearn_lvgp.engine._dask.DaskRows` whose minibatches,
        ``rows.subset``, are evaluated where they live, their draws made here as in memory).
        ``n_total`` is the ``N`` of the bound.
        """
        # the layers' large per-step buffers, reused by every step of this call only
        workspaces = [Workspace() for _ in range(self.n_layers)]

        def full(x):
            f, g = self.elbo(x, Xs, Ys, 1.0, n_samples, rs, workspaces=workspaces)
            return -f, -g

        def minibatch(x, idx):
            if rows is not None:
                draws = self.draw_rows(idx.size, n_samples, rs)
                f, g = self.evaluate(x, rows.subset(idx, extra=draws), n_total / idx.size,
                                     n_samples)
            else:
                f, g = self.elbo(x, Xs[idx], Ys[idx], n_total / idx.size, n_samples, rs,
                                 workspaces=workspaces)
            return -f, -g

        def natgrad(x, idx, gamma):
            if rows is not None:
                draws = self.draw_rows(idx.size, n_samples, rs)
                return self.natgrad_rows(x, rows.subset(idx, extra=draws), n_total / idx.size,
                                         n_samples, gamma)
            return self.natgrad(x, Xs[idx], Ys[idx], n_total / idx.size, n_samples, gamma, rs)

        return full, minibatch, natgrad


def layer_joint(layer, H, jitter):
    """Joint moments of a layer's outputs at the rows of ``H``: means ``(n, D)`` and the
    posterior covariances between rows ``(D, n, n)`` under ``q(u)``.

    ``k(H, H) - A^T A + (R^T B)^T (R^T B)`` with ``A = L^{-1} k(Z, H)``, ``B = A`` (whitened) or
    ``L^{-T} A``, ``q = N(m, R R^T)`` per output: the full-covariance form of the marginals of
    :func:`sklearn_lvgp.variational.marginals` (Salimbeni 2020, eqs. 1.28-1.29).
    """
    kernel = layer.kernel
    Lu = prior_factor(kernel, layer.Z, jitter).Lu
    A = solve_lower(Lu, kernel.K(layer.Z, H))
    B = A if layer.whiten else solve_upper(Lu, A)
    mean = B.T @ layer.q_mu + layer.mean_function(H)
    shared = kernel.K(H) - A.T @ A
    cov = np.stack([shared + (R.T @ B).T @ (R.T @ B) for R in layer.q_sqrt])
    return mean, cov
