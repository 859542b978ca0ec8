"""The starting state of a deep GP's model (Salimbeni & Deisenroth 2017, §4; Salimbeni 2020,
§2.4): layer widths, per-layer kernels, the layers' inducing inputs, mean functions and q(u)
initialised from the data, the model object (:class:`~sklearn_lvgp.bounds._dsvi_model._DSVI`, or
:class:`~sklearn_lvgp.bounds._iwvi.LatentDSVI` with latent covariates) and the checks of the
latent-covariate options."""

import numpy as np

from .._core.init import kmeans_inducing
from .._core.validation import check_int, check_layer_widths, check_option
from ..kernels import RBF, as_lvgp_kernel
from ..variational import (
    LinearMean,
    SVGPLayer,
    ZeroMean,
    inner_mean,
    prior_factor,
)
from ._dsvi_model import _DSVI

__all__ = ["build_model", "check_latent_options", "hidden_widths", "initial_layers",
           "initial_model", "layer_kernels", "INNER_PRIOR_VARIANCE", "INNER_SQRT_SCALE"]

#: ``inner_layer_init="collapsed"``: inner layers' q_sqrt start this small (near-deterministic
#: start, as the authors' code).
INNER_SQRT_SCALE = 1e-5
#: ``inner_layer_init="prior"``: variance of the default inner-layer kernel (a small GP
#: deviation from the linear mean function at the start, with q(u) at its prior).
INNER_PRIOR_VARIANCE = 0.05


def initial_layers(Xs, dims, templates, n_inducing, whiten, jitter, n_latent, random_state,
                   inner_init="prior"):
    """Kernels, mean functions and layers at the start of a fit.

    Inducing inputs from k-means of the (propagated) inputs and linear mean functions on the
    inner layers (Salimbeni & Deisenroth 2017, §5). The inner layers start close to their mean
    functions in one of two ways: ``inner_init="prior"``, ``q(u)`` equal to its prior (no KL)
    under a default kernel of small variance (:data:`INNER_PRIOR_VARIANCE`); or
    ``"collapsed"``, ``q(u)`` with covariance ``1e-10`` times the prior's under a unit-variance
    kernel (the authors' code). With latent covariates, their columns of ``Z`` start at
    ``N(0, 1)`` draws and the first layer's mean function ignores them (Salimbeni et al. 2019).

    Parameters
    ----------
    Xs : ndarray of shape (N, D)
        Standardised inputs.
    dims : list of int
        Input width of every layer, then the number of targets.
    templates : list of Kernel or None
        One kernel (or None for the default RBF) per layer.
    n_inducing : int
    whiten : bool
    jitter : float
    n_latent : int
        Latent covariate dimension (0 for none).
    random_state : numpy.random.RandomState
    inner_init : {"prior", "collapsed"}, default="prior"
        Start of the inner layers' ``q(u)`` (see above).

    Returns
    -------
    kernels, means, layers : list
    """
    n_layers = len(dims) - 1
    kernels, means, layers = [], [], []
    X_run = Xs
    Z_run = kmeans_inducing(Xs, n_inducing, random_state)
    if n_latent:
        # latent columns of Z ~ N(0, 1), as the code of the importance-weighted DGP
        # (Salimbeni et al. 2019); w enters the first layer only
        Z_w = random_state.standard_normal((n_inducing, n_latent))
    for ell in range(n_layers):
        d_in, d_out = dims[ell], dims[ell + 1]
        t = templates[ell]
        inner = ell < n_layers - 1
        variance = INNER_PRIOR_VARIANCE if inner and inner_init == "prior" else 1.0
        if t is not None:
            k = t.initialize(d_in, random_state)
        elif n_latent:
            # length scales sqrt(D_in), as the importance-weighted DGP code
            k = RBF(length_scale=np.full(d_in, np.sqrt(d_in)), variance=variance)
        else:
            k = RBF(length_scale=np.ones(d_in), variance=variance)
        mean = inner_mean(X_run, d_out) if ell < n_layers - 1 else ZeroMean(d_out)
        Z = Z_run.copy()
        if n_latent and ell == 0:
            Z = np.hstack([Z, Z_w])
            if ell < n_layers - 1:
                # keep the x part, drop w, as the importance-weighted DGP code: W = [W_x; 0]
                W_x = mean.W if isinstance(mean, LinearMean) else np.eye(d_out)
                x_mean = mean
                mean = LinearMean(np.vstack([W_x, np.zeros((n_latent, d_out))]))
        q_mu = np.zeros((n_inducing, d_out))
        if whiten:
            base = np.eye(n_inducing)
        else:
            base = prior_factor(k, Z, jitter).Lu
        q_sqrt = np.repeat(base[None], d_out, axis=0)
        if inner:
            if inner_init == "collapsed":
                q_sqrt *= INNER_SQRT_SCALE
            if n_latent and ell == 0:
                X_run, Z_run = x_mean(X_run), x_mean(Z_run)
            else:
                X_run, Z_run = mean(X_run), mean(Z_run)
        kernels.append(k)
        means.append(mean)
        layers.append(SVGPLayer(k, Z, q_mu, q_sqrt, mean, whiten))
    return kernels, means, layers


def build_model(initial, dims, params, latent, random_state, latent_model=None):
    """The DSVI model (or its latent-variable extension) and its packed starting point.

    Parameters
    ----------
    initial : tuple
        ``(kernels, means, layers)`` from :func:`initial_layers`.
    dims : list of int
        Layer widths.
    params : dict
        The estimator's parameters (``n_inducing``, ``whiten``, ``jitter``, ``expectation``,
        ``positive_transform``, ``noise_variance_init``) and, optionally, ``likelihood``: the
        final layer's initialised likelihood object, or ``None`` for the Gaussian of
        ``noise_variance_init``.
    latent : tuple or None
        ``(latent_dim, encoder_hidden, inference, n_importance)`` for latent covariates.
    random_state : numpy.random.RandomState
    latent_model : type
        The latent-variable model class (:class:`sklearn_lvgp.bounds._iwvi.LatentDSVI`, which
        extends :class:`_DSVI`), needed when ``latent`` is given.

    Returns
    -------
    model : _DSVI
    x0 : ndarray
    """
    kernels, means, layers = initial
    common = (kernels, means, dims, int(params["n_inducing"]), bool(params["whiten"]),
              float(params["jitter"]))
    likelihood = params.get("likelihood")
    if latent is not None:
        if likelihood is not None:
            raise ValueError("latent_dim >= 1 needs the default Gaussian likelihood "
                             "(likelihood=None).")
        noise = float(params["noise_variance_init"])
        model = latent_model(*common, params["positive_transform"], *latent)
        return model, model.pack(layers, noise, model.encoder.initial(random_state))
    model = _DSVI(*common, params["expectation"], params["positive_transform"], likelihood)
    return model, model.pack(layers, float(params["noise_variance_init"]) if likelihood is None
                             else likelihood)


def initial_model(Xs, n_targets, params, templates, random_state, latent_model):
    """The model of ``DeepGP``'s parameters and its starting point from the training inputs.

    The layer widths (:func:`hidden_widths`), the initial layers (:func:`initial_layers`:
    k-means inducing inputs and linear inner mean functions, Salimbeni & Deisenroth 2017, §5)
    and, with ``latent_dim``, the encoder's initial weights (:func:`build_model`).

    Parameters
    ----------
    Xs : ndarray of shape (N, D)
        Standardised training inputs (or a sample of them).
    n_targets : int
    params : dict
        The estimator's parameters.
    templates : list of Kernel or None
        One kernel template (or None for the default) per layer, or one for all.
    random_state : numpy.random.RandomState
    latent_model : type
        As in :func:`build_model`.

    Returns
    -------
    model : _DSVI
    x0 : ndarray
    """
    L, Dw = params["n_layers"], int(params["latent_dim"] or 0)
    dims = [Xs.shape[1] + Dw] + hidden_widths(params["hidden_dims"], L, Xs.shape[1]) + [n_targets]
    layers = initial_layers(Xs, dims, templates if len(templates) == L else templates * L,
                            params["n_inducing"], bool(params["whiten"]), float(params["jitter"]),
                            Dw, random_state, params["inner_layer_init"])
    latent = ((Dw, params["encoder_hidden"], params["inference"], params["n_importance"]) if Dw
              else None)
    return build_model(layers, dims, params, latent, random_state, latent_model)


def layer_kernels(kernel, n_layers):
    """The ``kernel`` parameter as one validated kernel (or None) per layer, or one for all."""
    kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
    if isinstance(kernel, (list, tuple)) and len(kernel) != n_layers:
        raise ValueError(f"kernel has {len(kernel)} entries but n_layers = {n_layers}; pass one "
                         "kernel or one per layer.")
    return [as_lvgp_kernel(k) for k in kernels]


def check_latent_options(params):
    """The latent-covariate parameters of ``DeepGP`` (Salimbeni 2020, ch. 5), and what they
    need of the others: sampled inputs (Monte Carlo) and a stochastic optimiser."""
    latent = check_int("latent_dim", params["latent_dim"], min_value=0, allow_none=True)
    check_option("inference", params["inference"], ("vi", "iwvi"))
    check_int("n_importance", params["n_importance"], min_value=1)
    check_layer_widths("encoder_hidden", params["encoder_hidden"])
    if not latent and params["inference"] != "vi":
        raise ValueError("inference='iwvi' importance-weights the latent inputs: it needs "
                         "latent_dim >= 1.")
    if latent and params["expectation"] != "monte_carlo":
        raise ValueError("latent_dim >= 1 needs expectation='monte_carlo' (the latent inputs "
                         "are sampled).")
    if latent and params["optimizer"] != "adam":
        raise ValueError("latent_dim >= 1 gives a stochastic objective: use optimizer='adam'.")


def hidden_widths(hidden_dims, n_layers, n_features):
    """Output widths of the inner layers: ``min(30, n_features)`` each by default (Salimbeni &
    Deisenroth 2017, §5), one width for all, or one per inner layer."""
    if hidden_dims is None:
        return [min(30, n_features)] * (n_layers - 1)
    if np.ndim(hidden_dims) == 0:
        return [check_int("hidden_dims", hidden_dims, min_value=1)] * (n_layers - 1)
    if len(hidden_dims) != n_layers - 1:
        raise ValueError(f"hidden_dims must have n_layers - 1 = {n_layers - 1} entries (one per "
                         f"inner layer), got {len(hidden_dims)}: {hidden_dims!r}.")
    return [check_int("hidden_dims[i]", d, min_value=1) for d in hidden_dims]
