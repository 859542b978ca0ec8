"""The kernel contract: sklearn-style hyperparameters plus vector-Jacobian products.

Every kernel provides

* ``K(X, Z=None)`` — the ``(N, M)`` covariance (``Z=None`` means ``Z = X``),
* ``Kdiag(X)`` — ``diag(K(X, X))`` of shape ``(N,)``,
* ``vjp(dL_dK, X, Z=None)`` — adjoints of ``X``, ``Z`` and ``theta`` given ``dL/dK``; with
  ``Z=None`` both arguments are ``X`` and the ``X`` adjoint contains both contributions,
* ``vjp_diag(dL_dKdiag, X)`` — the same for ``Kdiag``.

One backward call returns all three adjoints, so the shared intermediates (distances, kernel values)
are computed once. Hyperparameters live as plain attributes named after the ``__init__`` arguments;
``theta`` is the flat vector of the free ones in their transformed space (``log`` for positive
quantities, identity for unconstrained weights), and every ``theta`` gradient is with respect to it.

The hyperparameter machinery itself (``get_params``/``set_params``/``clone``, ``theta``, ``bounds``,
``"fixed"``) is :class:`HyperparameterBase`, which knows nothing of covariances: the likelihoods
(:mod:`sklearn_lvgp.likelihoods`) derive from it too. Besides ``"log"`` and ``"identity"`` it has
two transforms that kernels do not use: ``"logit"`` for values in ``(0, 1)`` and ``"ordered"`` for
increasing vectors (``theta = [v_0, log(v_1 - v_0), log(v_2 - v_1), ...]``).

:class:`KernelBase` is all of this but the algebra: ``+`` and ``*`` build
:class:`~sklearn_lvgp.kernels.Sum` and :class:`~sklearn_lvgp.kernels.Product`, so they are
defined beside those classes, on :class:`~sklearn_lvgp.kernels.Kernel`, the class every kernel
derives from.
"""

import functools
import inspect
from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

__all__ = ["Hyperparameter", "HyperparameterBase", "KernelVJP", "KernelBase"]


class Hyperparameter(NamedTuple):
    """Description of one hyperparameter of a kernel (or a likelihood).

    Parameters
    ----------
    name : str
        Attribute name on the kernel (also the ``__init__`` argument).
    transform : {"log", "identity", "logit", "ordered"}
        Space in which ``theta`` holds the value.
    n_elements : int
        Number of scalars.
    bounds : ndarray of shape (n_elements, 2)
        Bounds in ``theta`` space (``-inf``/``inf`` where unbounded).
    fixed : bool
        Whether the hyperparameter is excluded from ``theta``.
    """

    name: str
    transform: str
    n_elements: int
    bounds: np.ndarray
    fixed: bool


class KernelVJP(NamedTuple):
    """Adjoints returned by a kernel backward pass.

    Parameters
    ----------
    X : ndarray of shape (N, Q)
        Adjoint of the first argument.
    Z : ndarray of shape (M, Q) or None
        Adjoint of the second argument (``None`` when it was ``X`` itself).
    theta : ndarray of shape (n_theta,)
        Adjoint of the free hyperparameters in ``theta`` space.
    """

    X: np.ndarray
    Z: np.ndarray | None
    theta: np.ndarray


def _as_float_array(X, name="X"):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}.")
    return np.ascontiguousarray(X)


def _check_pair(X, Z):
    X = _as_float_array(X, "X")
    if Z is None:
        return X, None
    Z = _as_float_array(Z, "Z")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but Z has {Z.shape[1]}.")
    return X, Z


def _to_theta(transform, value):
    """A hyperparameter's flat natural ``value`` in ``theta`` space."""
    if transform == "log":
        return np.log(value)
    if transform == "identity":
        return value
    if transform == "logit":
        return np.log(value) - np.log1p(-value)
    if transform == "ordered":
        return np.concatenate([value[:1], np.log(np.diff(value))])
    raise ValueError(f"Unknown hyperparameter transform {transform!r}.")


def _from_theta(transform, chunk):
    """Inverse of :func:`_to_theta` (a new array)."""
    if transform == "log":
        return np.exp(chunk)
    if transform == "identity":
        return chunk.copy()
    if transform == "logit":
        return 1.0 / (1.0 + np.exp(-chunk))
    if transform == "ordered":
        return np.concatenate([chunk[:1], chunk[:1] + np.cumsum(np.exp(chunk[1:]))])
    raise ValueError(f"Unknown hyperparameter transform {transform!r}.")


def _bounds_to_theta(transform, b):
    """Natural-space bounds ``b`` of shape ``(n, 2)`` in ``theta`` space. For ``"ordered"`` the
    bounds are those of the gaps between consecutive entries; the first entry is unbounded."""
    with np.errstate(divide="ignore"):
        if transform == "log":
            return np.log(b)
        if transform == "logit":
            return np.log(b) - np.log1p(-b)
        if transform == "ordered":
            out = np.log(b)
            out[:1] = (-np.inf, np.inf)
            return out
    return b


@functools.cache
def _init_param_names(cls):
    """Sorted ``__init__`` argument names of a kernel class.

    Cached per class: training steps clone their kernels with a new ``theta``, and
    ``inspect.signature`` costs more than the rest of the clone.
    """
    sig = inspect.signature(cls.__init__)
    return tuple(sorted(
        p.name for p in sig.parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ))


@functools.cache
def _bounds_names(cls):
    """``(name, transform, name + "_bounds")`` per hyperparameter of a kernel class (cached:
    the layout is read on every evaluation, and the names never change)."""
    return tuple((name, transform, f"{name}_bounds") for name, transform in cls._hyperparameters)


class HyperparameterBase:
    """scikit-learn-style hyperparameters: ``get_params``/``set_params``/``clone``, ``theta``.

    A subclass declares its hyperparameters in the class attribute ``_hyperparameters``, a tuple
    of ``(name, transform)`` pairs; each name is an ``__init__`` argument stored verbatim, with a
    companion ``<name>_bounds`` argument (a ``(low, high)`` pair in the natural space, ``None``
    for unbounded, or ``"fixed"``). The base of kernels (:class:`KernelBase`) and of likelihoods
    (:class:`sklearn_lvgp.likelihoods.Likelihood`).
    """

    _hyperparameters: tuple = ()
    #: Word for the object in error messages.
    _noun = "object"

    # ------------------------------------------------------------------ sklearn-style parameters
    @classmethod
    def _get_param_names(cls):
        return list(_init_param_names(cls))

    def get_params(self, deep=True):
        """Get the parameters (those of nested kernels expanded with ``__`` when ``deep``).

        Parameters
        ----------
        deep : bool, default=True
            Whether to include the parameters of nested objects.

        Returns
        -------
        params : dict
            Parameter names mapped to their values.
        """
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            params[name] = value
            if deep and isinstance(value, HyperparameterBase):
                for k, v in value.get_params(deep=True).items():
                    params[f"{name}__{k}"] = v
        return params

    def set_params(self, **params):
        """Set parameters (``k1__length_scale=...`` reaches nested objects).

        Parameters
        ----------
        **params : dict
            Parameter names mapped to new values.

        Returns
        -------
        self : object
            This object.
        """
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            head, _, tail = key.partition("__")
            if head not in valid:
                raise ValueError(f"Invalid parameter {head!r} for {self._noun} {self!r}.")
            if tail:
                nested.setdefault(head, {})[tail] = value
            else:
                setattr(self, head, value)
        for head, sub in nested.items():
            getattr(self, head).set_params(**sub)
        return self

    def clone(self):
        """A deep copy with the same parameters.

        Returns
        -------
        copy : object
            An independent copy of the same class.
        """
        params = {}
        for name, value in self.get_params(deep=False).items():
            if isinstance(value, HyperparameterBase):
                value = value.clone()
            elif isinstance(value, np.ndarray):
                value = value.copy()
            params[name] = value
        return type(self)(**params)

    def clone_with_theta(self, theta):
        """A copy with ``theta`` replaced.

        Parameters
        ----------
        theta : ndarray of shape (n_theta,)
            New free hyperparameters in transformed space.

        Returns
        -------
        copy : object
            The copy.
        """
        k = self.clone()
        k.theta = theta
        return k

    # ------------------------------------------------------------------------ hyperparameters
    def _layout(self):
        """``(name, transform, n_elements, fixed)`` per hyperparameter: :attr:`hyperparameters`
        without building the bounds (the per-evaluation paths need only this)."""
        out = []
        for name, transform, bounds_name in _bounds_names(type(self)):
            raw = getattr(self, bounds_name)
            value = getattr(self, name)
            n = value.size if isinstance(value, np.ndarray) else int(np.size(value))
            out.append((name, transform, n, isinstance(raw, str) and raw == "fixed"))
        return out

    @property
    def hyperparameters(self):
        """List of :class:`Hyperparameter` (children prefixed for composite kernels)."""
        out = []
        for name, transform, n, fixed in self._layout():
            raw = getattr(self, f"{name}_bounds")
            if fixed or raw is None:
                b = np.array([[-np.inf, np.inf]] * n)
            else:
                b = np.asarray(raw, dtype=np.float64)
                b = np.broadcast_to(b.reshape(-1, 2) if b.ndim == 2 else b, (n, 2)).copy()
                b = _bounds_to_theta(transform, b)
            out.append(Hyperparameter(name, transform, n, b, fixed))
        return out

    @property
    def theta(self):
        """Free hyperparameters, flattened, in transformed space (log for positive ones)."""
        parts = []
        for name, transform, _, fixed in self._layout():
            if fixed:
                continue
            v = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            parts.append(_to_theta(transform, v))
        return np.concatenate(parts) if parts else np.zeros(0)

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        layout = [h for h in self._layout() if not h[3]]  # once: it is on every evaluation
        n_theta = sum(h[2] for h in layout)
        if theta.size != n_theta:
            raise ValueError(
                f"theta has {theta.size} entries, {self._noun} {self!r} has {n_theta}.")
        i = 0
        for name, transform, n, _ in layout:
            chunk = theta[i:i + n]
            i += n
            value = _from_theta(transform, chunk)
            old = getattr(self, name)
            if np.ndim(old) == 0:
                value = float(value[0])
            else:
                value = value.reshape(np.shape(old))
            setattr(self, name, value)

    @property
    def bounds(self):
        """Bounds of ``theta`` as an ``(n_theta, 2)`` array in transformed space."""
        parts = [h.bounds for h in self.hyperparameters if not h.fixed]
        return np.vstack(parts) if parts else np.zeros((0, 2))

    @property
    def n_theta(self):
        """Number of free hyperparameter scalars."""
        return sum(n for _, _, n, fixed in self._layout() if not fixed)

    def _pack_theta_grad(self, grads):
        """Assemble a ``theta`` gradient from per-hyperparameter gradients.

        ``grads`` maps a hyperparameter name to its gradient **already in transformed space**
        (e.g. ``d/d log(variance)``), summed to the hyperparameter's shape. Fixed ones are skipped.
        """
        layout = [h for h in self._layout() if not h[3]]
        out = np.empty(sum(h[2] for h in layout))
        i = 0
        for name, _, n, _ in layout:
            out[i:i + n] = np.asarray(grads[name], dtype=np.float64).reshape(-1)
            i += n
        return out

    # ----------------------------------------------------------------------------- equality
    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        a, b = self.get_params(deep=False), other.get_params(deep=False)
        if a.keys() != b.keys():
            return False
        for key in a:
            va, vb = a[key], b[key]
            if isinstance(va, HyperparameterBase) or isinstance(vb, HyperparameterBase):
                if va != vb:
                    return False
            elif isinstance(va, str) or isinstance(vb, str) or va is None or vb is None:
                if not (isinstance(va, type(vb)) and va == vb):
                    return False
            elif not np.array_equal(np.asarray(va, dtype=object), np.asarray(vb, dtype=object)):
                return False
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        parts = []
        for name, _ in self._hyperparameters:
            v = getattr(self, name)
            if v is None:
                parts.append(f"{name}=None")
            elif np.ndim(v) == 0:
                parts.append(f"{name}={float(v):.3g}")
            else:
                arr = np.asarray(v)
                parts.append(f"{name}=[{', '.join(f'{x:.3g}' for x in arr.ravel()[:6])}"
                             f"{', ...' if arr.size > 6 else ''}]")
        return f"{type(self).__name__}({', '.join(parts)})"


class KernelBase(HyperparameterBase, ABC):
    """Hyperparameters and the VJP contract of a kernel, without the algebra.

    Kernels derive from :class:`~sklearn_lvgp.kernels.Kernel`, which adds ``+`` and ``*`` and
    describes how a subclass declares its hyperparameters.
    """

    _noun = "kernel"

    # ------------------------------------------------------------------------- the contract
    @abstractmethod
    def K(self, X, Z=None):
        """Covariance matrix.

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
        """

    @abstractmethod
    def Kdiag(self, X):
        """Diagonal of ``K(X, X)``.

        Parameters
        ----------
        X : ndarray of shape (N, Q)
            Inputs.

        Returns
        -------
        Kdiag : ndarray of shape (N,)
            Prior variances.
        """

    @abstractmethod
    def vjp(self, dL_dK, X, Z=None):
        """Backward pass of :meth:`K`.

        Parameters
        ----------
        dL_dK : ndarray of shape (N, M)
            Adjoint of ``K(X, Z)``.
        X : ndarray of shape (N, Q)
            First argument.
        Z : ndarray of shape (M, Q), default=None
            Second argument; ``None`` means ``X`` (the ``X`` adjoint then covers both arguments).

        Returns
        -------
        KernelVJP
            ``X`` (N, Q), ``Z`` (M, Q) or ``None`` when ``Z`` is ``None``, ``theta`` (n_theta,).
        """

    @abstractmethod
    def vjp_diag(self, dL_dKdiag, X):
        """Backward pass of :meth:`Kdiag`.

        Parameters
        ----------
        dL_dKdiag : ndarray of shape (N,)
            Adjoint of ``Kdiag(X)``.
        X : ndarray of shape (N, Q)
            Inputs.

        Returns
        -------
        KernelVJP
            ``X`` (N, Q), ``Z=None``, ``theta`` (n_theta,).
        """

    def __call__(self, X, Z=None):
        return self.K(X, Z)

    # -------------------------------------------------------- optional cached forward/backward
    def K_cached(self, X, Z=None):
        """Forward pass that also returns what :meth:`vjp_cached` needs.

        The default keeps the inputs and lets :meth:`vjp_cached` recompute; kernels with costly
        intermediates (e.g. :class:`MLPKernel` features) override both methods.

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
        cache : object
            Input of :meth:`vjp_cached`.
        """
        return self.K(X, Z), (X, Z)

    def vjp_cached(self, dL_dK, cache, overwrite_dK=False):
        """Backward pass of :meth:`K_cached`; same result as :meth:`vjp`.

        Parameters
        ----------
        dL_dK : ndarray of shape (N, M)
            Adjoint of the kernel matrix.
        cache : object
            From :meth:`K_cached`.
        overwrite_dK : bool, default=False
            Allow the backward pass to use ``dL_dK`` as scratch space (its content is then
            undefined). Saves an ``(N, M)`` temporary where a kernel can use it.

        Returns
        -------
        KernelVJP
            Adjoints of ``X``, ``Z`` and ``theta``.
        """
        return self.vjp(dL_dK, *cache)

    @property
    def diag_is_constant(self):
        """Whether ``Kdiag(X)`` is the same for every input (stationary-type kernels)."""
        return False

    # ------------------------------------------------------------------- model-facing helpers
    def check_input_dim(self, n_features):  # noqa: B027 - optional hook, no-op by default
        """Raise ``ValueError`` if the kernel cannot act on ``n_features`` inputs.

        Parameters
        ----------
        n_features : int
            Input dimension the kernel will see.
        """

    def initialize(self, n_features, random_state):
        """Return a copy with data-dependent defaults filled in (e.g. random network weights).

        Parameters
        ----------
        n_features : int
            Input dimension.
        random_state : numpy.random.RandomState
            Source of randomness.

        Returns
        -------
        kernel : Kernel
            A new, ready-to-use kernel; ``self`` is not modified.
        """
        self.check_input_dim(n_features)
        return self.clone()

    def relevance(self, n_features):
        """Per-input-dimension relevance (larger = more relevant).

        Parameters
        ----------
        n_features : int
            Input dimension.

        Returns
        -------
        relevance : ndarray of shape (n_features,)
            Ones unless the kernel defines an ARD notion of relevance.
        """
        return np.ones(n_features)

    def summands(self):
        """Flat list of the additive components of this kernel.

        Returns
        -------
        summands : list of Kernel
            ``[self]`` unless the kernel is a :class:`Sum`, whose summands are flattened.
        """
        return [self]
