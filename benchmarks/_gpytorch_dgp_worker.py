"""Peer worker: times one GPyTorch DeepGP Adam step for ``bench_deep_gp`` (run in a torch venv).

Run as ``TORCH_PYTHON benchmarks/_gpytorch_dgp_worker.py DATA.npz [--depths 1,2,3,4,5]
[--repeats 3] [--dtype float64] [--serve]``. It imports only numpy, torch and gpytorch (never
``sklearn_lvgp``), so it runs in a side virtualenv.

``DATA.npz`` holds the standardised training inputs ``X`` (N, D) and targets ``Y`` (N, 1) that
our DeepGP sees, the inducing inputs ``Z`` (M, D) our model starts from, the noise variance
``noise``, the inner-layer ``q_sqrt`` scale ``inner_sqrt``, the Adam learning rate ``lr`` and the
number of sanity steps ``sanity_steps``. Every depth starts from the same values as ours: RBF-ARD
length scales 1 and variance 1, ``q_mu = 0``, whitened ``q_sqrt = I`` (last layer) or
``inner_sqrt * I`` (inner layers), identity mean for inner layers, zero mean for the last layer.

The model is the one of GPyTorch's deep GP tutorial: a ``gpytorch.models.deep_gps.DeepGP`` of
``DeepGPLayer`` s, each with a whitened ``VariationalStrategy`` over a
``CholeskyVariationalDistribution`` (full ``q_sqrt`` per output); hidden layers are batched over
their outputs (their own inducing inputs and kernel per output, as the tutorial builds them);
``DeepApproximateMLL(VariationalELBO(...))`` with one likelihood sample
(``num_likelihood_samples(1)``); ``torch.optim.Adam`` over all parameters except the fixed mean
functions. One step is forward, ELBO, backward and ``optimizer.step()``; ``SGP`` is depth 1 (one
``DeepGPLayer`` on the inputs). Torch runs with one intra-op and one inter-op thread.

Output lines start with ``@@`` followed by JSON (stray library output on stdout is ignored).
Batch mode prints one object ``{"ready": true, ..., "sanity": ..., "seconds": {depth: [...]}}``
with ``repeats`` interleaved timings per depth. With ``--serve`` it prints the ready object
(without ``seconds``) and then answers each input line ``time L`` with one timed step of depth
``L``: ``{"t": seconds, "f": -ELBO / N, "finite": bool}``; ``quit`` ends it.
"""

import sys
import time

from _peer_protocol import parse_args, send, serve


def _build(torch, gpytorch, data, L, dtype):
    """GPyTorch's tutorial deep GP with ``L`` layers, set to the common starting values."""
    from gpytorch.models.deep_gps import DeepGP, DeepGPLayer
    from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy

    X, Z = data["X"], data["Z"]
    N, D = X.shape
    M = Z.shape[0]
    inner_sqrt = float(data["inner_sqrt"])

    class Layer(DeepGPLayer):
        def __init__(self, d_in, d_out):
            batch = torch.Size([]) if d_out is None else torch.Size([d_out])
            z = torch.as_tensor(Z, dtype=dtype)
            if d_out is not None:
                z = z.expand(d_out, M, d_in).clone()
            q = CholeskyVariationalDistribution(M, batch_shape=batch)
            strategy = VariationalStrategy(self, z, q, learn_inducing_locations=True)
            super().__init__(strategy, d_in, d_out)
            if d_out is None:
                self.mean_module = gpytorch.means.ZeroMean()
            else:
                self.mean_module = gpytorch.means.LinearMean(d_in, batch_shape=batch)
                with torch.no_grad():  # identity mean (Salimbeni 2020, §2.2), fixed
                    self.mean_module.weights.copy_(torch.eye(d_in, dtype=dtype)[:, :, None])
                    self.mean_module.bias.zero_()
                self.mean_module.requires_grad_(False)
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(batch_shape=batch, ard_num_dims=d_in),
                batch_shape=batch)
            self.covar_module.base_kernel.lengthscale = 1.0
            self.covar_module.outputscale = 1.0
            with torch.no_grad():
                q.variational_mean.zero_()
                scale = 1.0 if d_out is None else inner_sqrt
                q.chol_variational_covar.copy_(scale * torch.eye(M, dtype=dtype).expand(
                    *batch, M, M))
            # keep these values: the strategy would otherwise re-initialise q(u) on first use
            strategy.variational_params_initialized.fill_(1)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    class Model(DeepGP):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(
                [Layer(D, D) for _ in range(L - 1)] + [Layer(D, None)])
            self.likelihood = gpytorch.likelihoods.GaussianLikelihood()
            self.likelihood.noise = float(data["noise"])

        def forward(self, x):
            h = x
            for layer in self.layers:
                h = layer(h)
            return h

    model = Model().to(dtype)
    model.train()
    mll = gpytorch.mlls.DeepApproximateMLL(
        gpytorch.mlls.VariationalELBO(model.likelihood, model, num_data=N))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=float(data["lr"]))
    return model, mll, opt


def main(argv=None):
    """Build the models, run the sanity checks, then time steps (batch or serve mode)."""
    args = parse_args(argv)
    try:
        import gpytorch
        import linear_operator
        import numpy as np
        import torch
    except Exception as exc:  # any import failure means "no usable GPyTorch here"
        send({"error": f"{type(exc).__name__}: {exc}"})
        return 0
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    torch.set_default_dtype(dtype)  # build every module in this precision
    raw = np.load(args.data)
    data = {k: raw[k] for k in raw.files}
    X = torch.as_tensor(data["X"], dtype=dtype)
    y = torch.as_tensor(data["Y"][:, 0], dtype=dtype)
    N = X.shape[0]
    depths = [int(d) for d in args.depths.split(",")]
    models, sanity = {}, {}
    n_draws = 5

    def elbo_mean(model, mll):
        with torch.no_grad(), gpytorch.settings.num_likelihood_samples(1):
            return float(np.mean([N * mll(model(X), y).item() for _ in range(n_draws)]))

    def step(model, mll, opt):
        with gpytorch.settings.num_likelihood_samples(1):
            opt.zero_grad()
            loss = -mll(model(X), y)
            loss.backward()
            opt.step()
        return float(loss.item())

    for L in depths:
        model, mll, opt = _build(torch, gpytorch, data, L, dtype)
        entry = {"elbo_init": elbo_mean(model, mll)}
        for _ in range(int(data["sanity_steps"])):
            step(model, mll, opt)
        entry["elbo_after_steps"] = elbo_mean(model, mll)
        # one forward + backward: does the gradient reach every layer?  The whitened KL does not
        # depend on a layer's kernel or inducing inputs, so their gradient is the data term's
        with gpytorch.settings.num_likelihood_samples(1):
            opt.zero_grad()
            (-mll(model(X), y)).backward()
        entry["grad_norm_kernel_Z_per_layer"] = [
            float(sum(float(p.grad.norm()) ** 2 for p in [
                *layer.covar_module.parameters(), layer.variational_strategy.inducing_points])
                ** 0.5) for layer in model.layers]
        opt.zero_grad()
        entry["n_params"] = int(sum(p.numel() for p in model.parameters() if p.requires_grad))
        step(model, mll, opt)  # warm-up
        sanity[str(L)] = entry
        models[L] = (model, mll, opt)
    _ready = {"ready": True, "library": "gpytorch", "gpytorch": gpytorch.__version__,
              "torch": torch.__version__, "linear_operator": linear_operator.__version__,
              "numpy": np.__version__, "python_version": sys.version.split()[0],
              "dtype": args.dtype, "threads": torch.get_num_threads(),
              "interop_threads": torch.get_num_interop_threads(), "N": int(N),
              "M": int(data["Z"].shape[0]), "sanity_steps": int(data["sanity_steps"]),
              "elbo_draws": n_draws, "sanity": sanity}

    def timed(L):
        t0 = time.perf_counter()
        f = step(*models[L])
        return time.perf_counter() - t0, f

    return serve(timed, list(models), _ready, args.repeats, args.serve)


if __name__ == "__main__":
    sys.exit(main())
