"""Kernel on a learned feature map: the "manifold GP" MLP kernel (Calandra et al. 2016).

The kernel of the MLP experiments of de Souza et al. (2021, §4.1.2): an RBF on a one-hidden-layer
network with ``[2, 30, 60]`` units (input, hidden, output).

``k(x, z) = base(g(x), g(z))`` with ``g(x) = tanh(W2^T relu(W1^T x + b1) + b2)``. The network
forward pass and its hand-written backward pass (:func:`mlp_forward`, :func:`mlp_vjp`) sit side by
side; the kernel chains the base kernel's ``X``/``Z`` adjoints back through them.
"""

from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ._base import Kernel
from ._contract import KernelVJP, _as_float_array
from ._stationary import RBF

__all__ = ["MLPKernel", "mlp_forward", "mlp_vjp", "MLPAdjoints"]


class MLPAdjoints(NamedTuple):
    """Adjoints of the network inputs and weights (biases keep their own shape)."""

    X: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


def mlp_forward(X, W1, b1, W2, b2):
    """Feature map ``g(X) = tanh(relu(X W1 + b1) W2 + b2)``.

    Parameters
    ----------
    X : ndarray of shape (N, Q)
        Inputs.
    W1 : ndarray of shape (Q, H1)
        First-layer weights.
    b1 : float or ndarray of shape (H1,)
        First-layer bias (a scalar is shared by all hidden units).
    W2 : ndarray of shape (H1, H2)
        Second-layer weights.
    b2 : float or ndarray of shape (H2,)
        Second-layer bias.

    Returns
    -------
    G : ndarray of shape (N, H2)
        Features.
    cache : tuple
        Intermediates for :func:`mlp_vjp`.
    """
    A1 = X @ W1 + b1
    H = np.maximum(A1, 0.0)
    G = np.tanh(H @ W2 + b2)
    return G, (X, A1, H, G, np.ndim(b1), np.ndim(b2))


def mlp_vjp(dL_dG, cache, W1, W2):
    """Backward pass of :func:`mlp_forward` (relu'(0) = 0).

    Parameters
    ----------
    dL_dG : ndarray of shape (N, H2)
        Adjoint of the features.
    cache : tuple
        As returned by :func:`mlp_forward`.
    W1, W2 : ndarray
        The weights used in the forward pass.

    Returns
    -------
    MLPAdjoints
        Adjoints of ``X``, ``W1``, ``b1``, ``W2``, ``b2`` (biases summed to their shape).
    """
    X, A1, H, G, nd_b1, nd_b2 = cache
    dA2 = dL_dG * (1.0 - G * G)
    dW2 = H.T @ dA2
    db2 = dA2.sum(axis=0)
    dA1 = (dA2 @ W2.T) * (A1 > 0.0)
    dW1 = X.T @ dA1
    db1 = dA1.sum(axis=0)
    dX = dA1 @ W1.T
    if nd_b1 == 0:
        db1 = np.asarray(db1.sum())
    if nd_b2 == 0:
        db2 = np.asarray(db2.sum())
    return MLPAdjoints(dX, dW1, db1, dW2, db2)


def _add_weights(a, b):
    """Sum the weight adjoints of two backward passes (the ``X`` field is left as ``None``)."""
    return MLPAdjoints(None, a.W1 + b.W1, a.b1 + b.b1, a.W2 + b.W2, a.b2 + b.b2)


class MLPKernel(Kernel):
    r"""Base kernel composed with a two-layer neural feature map ("manifold GP").

    .. math::

        k(x, z) = k_{\mathrm{base}}(g(x), g(z)), \qquad
        g(x) = \tanh\left(W_2^\top \operatorname{relu}(W_1^\top x + b_1) + b_2\right)

    The network weights and biases are hyperparameters in identity space (unbounded by
    default) and come first in ``theta``, in the order ``W1`` (row-major), ``b1``, ``W2``, ``b2``,
    followed by ``base_kernel.theta``. Gradients are hand-written backprop with
    :math:`\operatorname{relu}'(0) = 0`.

    Unset weights are drawn by :meth:`initialize`, which returns a ready copy; a kernel with any of
    ``W1``, ``b1``, ``W2``, ``b2`` or ``base_kernel`` still ``None`` raises ``ValueError`` when
    evaluated.

    Parameters
    ----------
    base_kernel : Kernel, default=None
        Kernel on the ``output_units`` features. ``None`` means an ARD :class:`RBF` with unit
        length scales and unit variance, created by :meth:`initialize`.
    hidden_units : int, default=30
        Width ``H1`` of the ReLU layer.
    output_units : int, default=60
        Width ``H2`` of the tanh output layer (the base kernel's input dimension).
    per_unit_bias : bool, default=False
        Whether :meth:`initialize` creates one bias per unit instead of one scalar per layer
        (the reproduction uses scalar biases).
    W1 : ndarray of shape (n_features, hidden_units), default=None
        First-layer weights; ``None`` until :meth:`initialize`.
    b1 : float or ndarray of shape (hidden_units,), default=None
        First-layer bias; ``None`` until :meth:`initialize`.
    W2 : ndarray of shape (hidden_units, output_units), default=None
        Second-layer weights; ``None`` until :meth:`initialize`.
    b2 : float or ndarray of shape (output_units,), default=None
        Second-layer bias; ``None`` until :meth:`initialize`.
    W1_bounds, b1_bounds, W2_bounds, b2_bounds : pair of float, "fixed" or None, default=None
        Bounds in identity space; ``None`` means unbounded and ``"fixed"`` excludes the block from
        ``theta``.

    Notes
    -----
    With ``n_features=2``, the default sizes and scalar biases the kernel has
    ``60 + 1800 + 2 + 1 + 60 = 1923`` hyperparameters (the ``[2, 30, 60]`` network of de Souza et
    al. 2021, §4.1.2).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.kernels import MLPKernel
    >>> k = MLPKernel(hidden_units=4, output_units=3).initialize(2, np.random.RandomState(0))
    >>> k.n_theta
    26
    >>> k.K(np.zeros((2, 2))).shape
    (2, 2)
    """

    _hyperparameters = (("W1", "identity"), ("b1", "identity"), ("W2", "identity"),
                        ("b2", "identity"))

    def __init__(self, base_kernel=None, hidden_units=30, output_units=60, per_unit_bias=False,
                 W1=None, b1=None, W2=None, b2=None, W1_bounds=None, b1_bounds=None,
                 W2_bounds=None, b2_bounds=None):
        self.base_kernel = base_kernel
        self.hidden_units = hidden_units
        self.output_units = output_units
        self.per_unit_bias = per_unit_bias
        self.W1 = W1
        self.b1 = b1
        self.W2 = W2
        self.b2 = b2
        self.W1_bounds = W1_bounds
        self.b1_bounds = b1_bounds
        self.W2_bounds = W2_bounds
        self.b2_bounds = b2_bounds

    # ---------------------------------------------------------------------------- validation
    def _weights(self):
        """Validated ``(W1, b1, W2, b2)``; raises if uninitialised or inconsistent."""
        missing = [n for n in ("W1", "b1", "W2", "b2", "base_kernel") if getattr(self, n) is None]
        if missing:
            raise ValueError(
                f"MLPKernel is not initialised ({', '.join(missing)} is None); use "
                "kernel.initialize(n_features, random_state), which returns a ready copy.")
        H1, H2 = int(self.hidden_units), int(self.output_units)
        W1 = np.asarray(self.W1, dtype=np.float64)
        W2 = np.asarray(self.W2, dtype=np.float64)
        b1 = np.asarray(self.b1, dtype=np.float64)
        b2 = np.asarray(self.b2, dtype=np.float64)
        if W1.ndim != 2 or W1.shape[1] != H1:
            raise ValueError(f"W1 must have shape (n_features, {H1}), got {W1.shape}.")
        if W2.shape != (H1, H2):
            raise ValueError(f"W2 must have shape ({H1}, {H2}), got {W2.shape}.")
        if b1.shape not in ((), (H1,)):
            raise ValueError(f"b1 must be a scalar or have shape ({H1},), got {b1.shape}.")
        if b2.shape not in ((), (H2,)):
            raise ValueError(f"b2 must be a scalar or have shape ({H2},), got {b2.shape}.")
        return W1, b1, W2, b2

    def check_input_dim(self, n_features):
        if self.W1 is not None:
            W1 = np.asarray(self.W1)
            if W1.ndim != 2 or W1.shape[0] != n_features:
                raise ValueError(
                    f"MLPKernel.W1 has shape {W1.shape} but the inputs have {n_features} "
                    "dimensions; W1 needs one row per input dimension.")
        if self.base_kernel is not None:
            self.base_kernel.check_input_dim(int(self.output_units))

    def initialize(self, n_features, random_state):
        """Return a copy with unset weights, biases and base kernel filled in.

        Weights are He-normal, ``N(0, 2 / fan_in)``, drawn from ``random_state`` in the order
        ``W1`` then ``W2``; biases start at 0.01 (a scalar per layer unless ``per_unit_bias``);
        the base kernel (default: ARD :class:`RBF` with unit length scales and variance) is
        initialised on ``output_units`` dimensions. Values already set are kept.

        Parameters
        ----------
        n_features : int
            Input dimension.
        random_state : int, numpy.random.RandomState or None
            Source of the random weights.

        Returns
        -------
        kernel : MLPKernel
            A new, ready-to-use kernel; ``self`` is not modified.
        """
        self.check_input_dim(n_features)
        rs = check_random_state(random_state)
        H1, H2 = int(self.hidden_units), int(self.output_units)
        params = self.clone().get_params(deep=False)
        if params["W1"] is None:
            params["W1"] = rs.normal(0.0, np.sqrt(2.0 / n_features), size=(n_features, H1))
        if params["W2"] is None:
            params["W2"] = rs.normal(0.0, np.sqrt(2.0 / H1), size=(H1, H2))
        for name, width in (("b1", H1), ("b2", H2)):
            if params[name] is None:
                params[name] = np.full(width, 0.01) if self.per_unit_bias else 0.01
        base = params["base_kernel"]
        if base is None:
            base = RBF(length_scale=np.ones(H2), variance=1.0)
        params["base_kernel"] = base.initialize(H2, rs)
        kernel = type(self)(**params)
        kernel._weights()
        return kernel

    def relevance(self, n_features):
        """Euclidean norm of each input row of ``W1``, ``||W1[q, :]||_2``.

        A large norm means input dimension ``q`` moves the hidden layer strongly. This is a
        heuristic, meaningful mainly when all inputs are used, e.g. ``n_features = 2`` as in the MLP
        runs of de Souza et al. (2021, §4.1.2).

        Parameters
        ----------
        n_features : int
            Input dimension.

        Returns
        -------
        relevance : ndarray of shape (n_features,)
            Row norms of ``W1``.
        """
        if self.W1 is None:
            raise ValueError("MLPKernel.relevance needs W1; call initialize first.")
        self.check_input_dim(n_features)
        return np.linalg.norm(np.asarray(self.W1, dtype=np.float64), axis=1)

    # ------------------------------------------------------------------------ hyperparameters
    def _own_hyperparameters(self):
        self._weights()
        return Kernel.hyperparameters.fget(self)

    @property
    def hyperparameters(self):
        """Network hyperparameters followed by the base kernel's (prefixed ``base_kernel__``)."""
        own = self._own_hyperparameters()
        return own + [h._replace(name=f"base_kernel__{h.name}")
                      for h in self.base_kernel.hyperparameters]

    @property
    def theta(self):
        """Free network weights (identity space) followed by ``base_kernel.theta``."""
        parts = [np.asarray(getattr(self, h.name), dtype=np.float64).reshape(-1)
                 for h in self._own_hyperparameters() if not h.fixed]
        return np.concatenate(parts + [self.base_kernel.theta])

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.size != self.n_theta:
            raise ValueError(f"theta has {theta.size} entries, kernel {self!r} has {self.n_theta}.")
        i = 0
        for h in self._own_hyperparameters():
            if h.fixed:
                continue
            chunk = theta[i:i + h.n_elements].copy()
            i += h.n_elements
            old = getattr(self, h.name)
            setattr(self, h.name, float(chunk[0]) if np.ndim(old) == 0
                    else chunk.reshape(np.shape(old)))
        self.base_kernel.theta = theta[i:]

    @property
    def bounds(self):
        """Bounds of ``theta``: the network blocks' then the base kernel's."""
        parts = [h.bounds for h in self._own_hyperparameters() if not h.fixed]
        return np.vstack(parts + [self.base_kernel.bounds])

    @property
    def n_theta(self):
        """Number of free hyperparameter scalars (network plus base kernel)."""
        own = sum(h.n_elements for h in self._own_hyperparameters() if not h.fixed)
        return own + self.base_kernel.n_theta

    def _theta_grad(self, adj, base_theta_grad):
        parts = [np.asarray(getattr(adj, h.name), dtype=np.float64).reshape(-1)
                 for h in self._own_hyperparameters() if not h.fixed]
        return np.concatenate(parts + [np.asarray(base_theta_grad, dtype=np.float64)])

    # ----------------------------------------------------------------------------- contract
    def _features(self, X, weights, name="X"):
        X = _as_float_array(X, name)
        W1 = weights[0]
        if X.shape[1] != W1.shape[0]:
            raise ValueError(
                f"{name} has {X.shape[1]} columns but MLPKernel.W1 expects {W1.shape[0]}.")
        return mlp_forward(X, *weights)

    def K(self, X, Z=None):
        return self.K_cached(X, Z)[0]

    def K_cached(self, X, Z=None):
        """Kernel matrix plus the network features, reused by :meth:`vjp_cached`.

        Parameters
        ----------
        X : ndarray of shape (N, Q)
            First argument.
        Z : ndarray of shape (M, Q), default=None
            Second argument; ``None`` means ``X``.

        Returns
        -------
        K : ndarray of shape (N, M)
            Kernel matrix.
        cache : tuple
            Features and network intermediates of both arguments.
        """
        w = self._weights()
        GX, cX = self._features(X, w)
        if Z is None:
            return self.base_kernel.K(GX, None), (w, GX, cX, None, None)
        GZ, cZ = self._features(Z, w, "Z")
        return self.base_kernel.K(GX, GZ), (w, GX, cX, GZ, cZ)

    def vjp_cached(self, dL_dK, cache, overwrite_dK=False):
        """Backward pass of :meth:`K_cached` without recomputing the features.

        Parameters
        ----------
        dL_dK : ndarray of shape (N, M)
            Adjoint of the kernel matrix.
        cache : tuple
            From :meth:`K_cached`.
        overwrite_dK : bool, default=False
            Ignored (the base kernel's backward recomputes its matrix from the features).

        Returns
        -------
        KernelVJP
            Adjoints of ``X``, ``Z`` and ``theta``.
        """
        w, GX, cX, GZ, cZ = cache
        W1, _, W2, _ = w
        v = self.base_kernel.vjp(dL_dK, GX, GZ)
        adj_x = mlp_vjp(v.X, cX, W1, W2)
        if GZ is None:
            return KernelVJP(adj_x.X, None, self._theta_grad(adj_x, v.theta))
        adj_z = mlp_vjp(v.Z, cZ, W1, W2)
        adj = _add_weights(adj_x, adj_z)
        return KernelVJP(adj_x.X, adj_z.X, self._theta_grad(adj, v.theta))

    @property
    def diag_is_constant(self):
        return self.base_kernel is not None and self.base_kernel.diag_is_constant

    def Kdiag(self, X):
        GX, _ = self._features(X, self._weights())
        return self.base_kernel.Kdiag(GX)

    def vjp(self, dL_dK, X, Z=None):
        return self.vjp_cached(dL_dK, self.K_cached(X, Z)[1])

    def vjp_diag(self, dL_dKdiag, X):
        w = self._weights()
        GX, cX = self._features(X, w)
        v = self.base_kernel.vjp_diag(dL_dKdiag, GX)
        adj = mlp_vjp(v.X, cX, w[0], w[2])
        return KernelVJP(adj.X, None, self._theta_grad(adj, v.theta))

    def __repr__(self):
        state = "initialised" if self.W1 is not None else "uninitialised"
        return (f"MLPKernel(hidden_units={self.hidden_units}, output_units={self.output_units}, "
                f"{state}, base_kernel={self.base_kernel!r})")
