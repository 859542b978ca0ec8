"""Peer worker: times one GPflux DeepGP Adam step for ``bench_deep_gp`` (run in a TF venv).

Run as ``TF_PYTHON benchmarks/_gpflux_dgp_worker.py DATA.npz [--depths 1,2,3,4,5]
[--repeats 3] [--dtype float64] [--serve]``. It imports only numpy, TensorFlow, GPflow and
GPflux (never ``sklearn_lvgp``), so it runs in a side virtualenv.

``DATA.npz`` is the file described in ``_gpytorch_dgp_worker.py`` (standardised ``X``, ``Y``,
inducing inputs ``Z``, ``noise``, ``inner_sqrt``, ``lr``, ``sanity_steps``); every depth starts
from the same values as ours.

The model is built with GPflux's helpers the way its constant-width deep GP architecture does:
per layer one RBF-ARD (``SquaredExponential``) kernel shared by the outputs
(``construct_basic_kernel(..., share_hyperparams=True)``), one set of inducing inputs shared by
the outputs (``construct_basic_inducing_variables(..., share_variables=True)``), a ``GPLayer``
with ``whiten=True``, ``full_cov=False``, one sample (``num_samples=None``) and full ``q_sqrt``
per output; identity mean (``construct_mean_function``) for inner layers, zero mean for the last;
``LikelihoodLayer(Gaussian)``; ``gpflux.models.DeepGP``. One step is ``-DeepGP.elbo`` under a
``tf.GradientTape`` and ``Adam.apply_gradients``, compiled with ``tf.function`` (as Keras
``fit`` would). TensorFlow runs with one intra-op and one inter-op thread.

Protocol and output: as ``_gpytorch_dgp_worker.py`` (``@@``-prefixed JSON; batch mode, or
``--serve`` answering ``time L`` lines with ``{"t": seconds, "f": -ELBO / N, "finite": bool}``).
"""

import os
import sys
import time

from _peer_protocol import parse_args, send, serve


def _build(tf, gpflow, gpflux, data, L):
    """A GPflux deep GP with ``L`` layers, set to the common starting values."""
    from gpflux.helpers import (
        construct_basic_inducing_variables,
        construct_basic_kernel,
        construct_mean_function,
    )

    X, Y, Z = data["X"], data["Y"], data["Z"]
    N, D = X.shape
    M = Z.shape[0]
    layers = []
    X_running = X
    for ell in range(L):
        last = ell == L - 1
        d_out = Y.shape[1] if last else D
        kernel = construct_basic_kernel(
            gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=[1.0] * D),
            output_dim=d_out, share_hyperparams=True)
        inducing = construct_basic_inducing_variables(M, D, output_dim=d_out,
                                                      share_variables=True, z_init=Z.copy())
        if last:
            mean = gpflow.mean_functions.Zero()
        else:
            mean = construct_mean_function(X_running, D, d_out)
        layer = gpflux.layers.GPLayer(kernel, inducing, num_data=N, mean_function=mean,
                                      num_latent_gps=d_out, full_cov=False, whiten=True,
                                      name=f"gp_{ell}", verbose=False)
        if not last:
            layer.q_sqrt.assign(layer.q_sqrt * float(data["inner_sqrt"]))
        layers.append(layer)
    likelihood = gpflux.layers.LikelihoodLayer(
        gpflow.likelihoods.Gaussian(variance=float(data["noise"])))
    model = gpflux.models.DeepGP(layers, likelihood, num_data=N)
    import tf_keras  # GPflux builds on tf_keras (Keras 2)

    opt = tf_keras.optimizers.Adam(learning_rate=float(data["lr"]))
    return model, opt


def main(argv=None):
    """Build the models, run the sanity checks, then time steps (batch or serve mode)."""
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import numpy as np
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        import gpflow
        import gpflux
        import tensorflow_probability as tfp
        import tf_keras
    except Exception as exc:  # any import failure means "no usable GPflux here"
        send({"error": f"{type(exc).__name__}: {exc}"})
        return 0
    dtype = getattr(np, args.dtype)
    gpflow.config.set_default_float(dtype)
    tf.random.set_seed(0)
    raw = np.load(args.data)
    data = {k: raw[k] for k in raw.files}
    for k in ("X", "Y", "Z"):
        data[k] = data[k].astype(dtype)
    X, Y = tf.constant(data["X"]), tf.constant(data["Y"])
    N = int(data["X"].shape[0])
    depths = [int(d) for d in args.depths.split(",")]
    models, sanity = {}, {}
    n_draws = 5

    def make_step(model, opt):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = -model.elbo((X, Y)) / N
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return step

    for L in depths:
        model, opt = _build(tf, gpflow, gpflux, data, L)
        elbo = lambda model=model: model.elbo((X, Y))  # noqa: E731 (eager: no tracing)
        entry = {"elbo_init": float(np.mean([elbo().numpy() for _ in range(n_draws)]))}
        step = make_step(model, opt)
        for _ in range(int(data["sanity_steps"])):
            step()
        entry["elbo_after_steps"] = float(np.mean([elbo().numpy() for _ in range(n_draws)]))
        # one forward + backward: does the gradient reach every layer?  The whitened KL does not
        # depend on a layer's kernel or inducing inputs, so their gradient is the data term's
        per_layer = [[*layer.kernel.trainable_variables,
                      *layer.inducing_variable.trainable_variables]
                     for layer in model.f_layers]
        with tf.GradientTape() as tape:
            loss = -model.elbo((X, Y)) / N
        grads = tape.gradient(loss, per_layer)
        entry["grad_norm_kernel_Z_per_layer"] = [
            float(np.sqrt(sum(float(tf.reduce_sum(g * g)) for g in gs))) for gs in grads]
        entry["n_params"] = int(sum(int(np.prod(v.shape)) for v in model.trainable_variables))
        step()  # warm-up (the first call traced the function)
        sanity[str(L)] = entry
        models[L] = step
    _ready = {"ready": True, "library": "gpflux", "gpflux": gpflux.__version__,
              "gpflow": gpflow.__version__, "tensorflow": tf.__version__,
              "tensorflow_probability": tfp.__version__, "tf_keras": tf_keras.__version__,
              "numpy": np.__version__, "python_version": sys.version.split()[0],
              "dtype": args.dtype,
              "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
              "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
              "N": N, "M": int(data["Z"].shape[0]), "sanity_steps": int(data["sanity_steps"]),
              "elbo_draws": n_draws, "sanity": sanity}

    def timed(L):
        t0 = time.perf_counter()
        f = float(models[L]().numpy())
        return time.perf_counter() - t0, f

    return serve(timed, list(models), _ready, args.repeats, args.serve)


if __name__ == "__main__":
    sys.exit(main())
