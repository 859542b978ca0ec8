"""Conversion of scikit-learn kernels to the equivalent :mod:`sklearn_lvgp.kernels` kernel.

scikit-learn's stationary kernels have no amplitude of their own: it comes from a
``ConstantKernel`` factor. The converted stationary and periodic kernels therefore carry
``variance=1.0`` with ``variance_bounds="fixed"``, and a ``ConstantKernel`` factor of a product
is folded into that variance (with its bounds) wherever one is free to take it, so that
``ConstantKernel(c) * RBF(l)`` becomes ``RBF(length_scale=l, variance=c)`` with the same number
of free hyperparameters as the original.

The estimators' ``kernel`` parameter converts with ``free_amplitude=True``: a summand with
no ``ConstantKernel`` factor gets a learned amplitude (a bare ``RBF()`` would otherwise fix the
signal variance at 1, whatever the units of the targets), and a ``ConstantKernel(c, "fixed")``
factor is the way to keep an amplitude fixed.
"""

import numpy as np
from sklearn.gaussian_process import kernels as skk

from ._base import Constant, Kernel, Product, Sum
from ._linear import Linear
from ._periodic import Periodic
from ._stationary import RBF, Matern12, Matern32, Matern52, RationalQuadratic
from ._white import White

__all__ = ["from_sklearn", "as_lvgp_kernel", "split_white"]

_SUPPORTED = ("RBF, Matern (nu=0.5, 1.5, 2.5 or inf), RationalQuadratic, ExpSineSquared, "
              "DotProduct, ConstantKernel, WhiteKernel, and Sum and Product of these")

_MATERN = {0.5: Matern12, 1.5: Matern32, 2.5: Matern52, np.inf: RBF}


def _describe(kernel):
    try:
        return repr(kernel)
    except Exception:  # a broken user subclass must still get the intended error
        return f"<{type(kernel).__name__} instance>"


def _unsupported(kernel, why):
    return TypeError(f"Cannot convert {_describe(kernel)} to a sklearn_lvgp kernel: {why}. "
                     f"Convertible scikit-learn kernels: {_SUPPORTED}.")


def _value(v):
    """A scalar as ``float``, an ARD vector as a fresh float array (size 1 counts as scalar)."""
    a = np.asarray(v, dtype=np.float64)
    return float(a.reshape(-1)[0]) if a.size == 1 else a.copy()


def _bounds(b, f=None):
    """sklearn bounds (a pair, per-element pairs or ``"fixed"``), mapped through ``f``."""
    if isinstance(b, str):
        if b != "fixed":
            raise ValueError(f"Bounds must be a (low, high) pair or 'fixed', got {b!r}.")
        return "fixed"
    a = np.asarray(b, dtype=np.float64)
    if f is not None:
        a = f(a)
    if a.size == 2:
        return float(a.reshape(-1)[0]), float(a.reshape(-1)[1])
    return a.reshape(-1, 2).copy()


def _unit(kernel, units):
    """``kernel``, recorded in ``units`` as carrying the conversion's fixed unit amplitude."""
    units.add(id(kernel))
    return kernel


def _stationary(cls, k, units, **extra):
    return _unit(cls(length_scale=_value(k.length_scale), variance=1.0,
                     length_scale_bounds=_bounds(k.length_scale_bounds),
                     variance_bounds="fixed", **extra), units)


def _rbf(k, units):
    return _stationary(RBF, k, units)


def _matern(k, units):
    nu = float(k.nu)
    if nu not in _MATERN:
        raise _unsupported(k, f"Matern with nu={nu} has no sklearn_lvgp equivalent")
    return _stationary(_MATERN[nu], k, units)


def _rational_quadratic(k, units):
    return _stationary(RationalQuadratic, k, units, alpha=float(k.alpha),
                       alpha_bounds=_bounds(k.alpha_bounds))


def _exp_sine_squared(k, units):
    # exp(-2 sin^2(pi d / p) / L^2) = exp(-sin^2(pi d / p) / (2 l^2)) with l = L / 2
    return _unit(Periodic(period=float(k.periodicity), length_scale=0.5 * float(k.length_scale),
                          variance=1.0, period_bounds=_bounds(k.periodicity_bounds),
                          length_scale_bounds=_bounds(k.length_scale_bounds, lambda a: 0.5 * a),
                          variance_bounds="fixed"), units)


def _dot_product(k, units):
    # sigma_0^2 + x . z = Linear(1, fixed) + Constant(sigma_0^2)
    linear = _unit(Linear(variances=1.0, variances_bounds="fixed"), units)
    sigma_0, bounds = float(k.sigma_0), _bounds(k.sigma_0_bounds, np.square)
    if sigma_0 == 0.0 and bounds == "fixed":
        return linear
    return Sum(linear, Constant(variance=sigma_0 ** 2, variance_bounds=bounds))


def _constant(k, units):
    return Constant(variance=float(k.constant_value),
                    variance_bounds=_bounds(k.constant_value_bounds))


def _white(k, units):
    return White(noise_level=float(k.noise_level), noise_level_bounds=_bounds(k.noise_level_bounds))


def _sum(k, units):
    return Sum(_convert(k.k1, units), _convert(k.k2, units))


def _amplitude(kernel):
    return "variances" if isinstance(kernel, Linear) else "variance"


def _fold(constant, kernel, units):
    """Move ``constant`` into a unit amplitude of ``kernel`` (in place); ``True`` if done.

    The amplitude is ``variance`` (stationary, periodic) or ``variances`` (linear) that is
    still the fixed 1.0 the conversion gave it (``kernel`` in ``units``); a product is searched
    factor by factor.
    """
    if isinstance(kernel, Product):
        return _fold(constant, kernel.k1, units) or _fold(constant, kernel.k2, units)
    if id(kernel) not in units:
        return False
    units.discard(id(kernel))
    name = _amplitude(kernel)
    setattr(kernel, name, constant.variance)
    setattr(kernel, f"{name}_bounds", constant.variance_bounds)
    return True


def _product(k, units):
    k1, k2 = _convert(k.k1, units), _convert(k.k2, units)
    if isinstance(k1, Constant) and _fold(k1, k2, units):
        return k2
    if isinstance(k2, Constant) and _fold(k2, k1, units):
        return k1
    return Product(k1, k2)


def _operands(kernel, cls):
    """The operands of a tree of ``cls`` (``Sum`` or ``Product``), left to right."""
    if isinstance(kernel, cls):
        return _operands(kernel.k1, cls) + _operands(kernel.k2, cls)
    return [kernel]


def _free_amplitudes(kernel, units):
    """Free the amplitude of each summand that has none of the user's (in place).

    A summand (a product of factors, or a single kernel) that contains a ``Constant`` (the
    user's ``ConstantKernel``, folded or not, fixed or not) is left as it is; otherwise the
    unit amplitude of its first factor that has one gets the default bounds of its class, so
    the summand's scale is learned. A factor that is itself a sum is treated the same way when
    no factor has an amplitude.
    """
    for term in _operands(kernel, Sum):
        factors = _operands(term, Product)
        if any(isinstance(f, Constant) or (hasattr(f, _amplitude(f)) and id(f) not in units
                                           and not isinstance(f, (Sum, White)))
               for f in factors):
            continue
        unit = next((f for f in factors if id(f) in units), None)
        if unit is not None:
            name = _amplitude(unit)
            default = type(unit)().get_params()[f"{name}_bounds"]
            setattr(unit, f"{name}_bounds", default)
            units.discard(id(unit))
        else:
            inner = next((f for f in factors if isinstance(f, Sum)), None)
            if inner is not None:
                _free_amplitudes(inner, units)


_CONVERTERS = {
    skk.RBF: _rbf, skk.Matern: _matern, skk.RationalQuadratic: _rational_quadratic,
    skk.ExpSineSquared: _exp_sine_squared, skk.DotProduct: _dot_product,
    skk.ConstantKernel: _constant, skk.WhiteKernel: _white, skk.Sum: _sum,
    skk.Product: _product,
}


def _convert(kernel, units):
    converter = _CONVERTERS.get(type(kernel))
    if converter is None:
        raise _unsupported(kernel, f"{type(kernel).__name__} is not supported")
    return converter(kernel, units)


def from_sklearn(kernel, free_amplitude=False):
    """Convert a scikit-learn kernel to the equivalent sklearn_lvgp kernel.

    Hyperparameter values and bounds (including ``"fixed"``) are carried over; the result
    evaluates to the same matrices as ``kernel``. Conversions:

    * ``RBF``, ``Matern`` (``nu`` = 0.5, 1.5, 2.5, ``inf``), ``RationalQuadratic`` →
      :class:`RBF`, :class:`Matern12`, :class:`Matern32`, :class:`Matern52`, :class:`RBF`,
      :class:`RationalQuadratic` with the same (ARD) ``length_scale`` (and ``alpha``) and
      ``variance=1.0`` fixed.
    * ``ExpSineSquared(length_scale=L, periodicity=p)`` → :class:`Periodic` with
      ``period=p``, ``length_scale=L / 2`` (bounds halved), ``variance=1.0`` fixed. Equal for
      one-dimensional inputs only: scikit-learn takes the sine of the Euclidean distance,
      :class:`Periodic` sums the squared sines over the input dimensions.
    * ``DotProduct(sigma_0)`` → ``Linear(variances=1.0, "fixed") + Constant(sigma_0 ** 2)``
      (bounds squared); just the :class:`Linear` when ``sigma_0 = 0`` is fixed.
    * ``ConstantKernel(c)`` → :class:`Constant` ``(variance=c)``; ``WhiteKernel`` →
      :class:`White` (same semantics: noise only in ``K(X)``, zero in ``K(X, Z)``).
    * ``Sum``, ``Product`` → :class:`Sum`, :class:`Product` of the converted operands. A
      ``ConstantKernel`` factor becomes the variance of the other factor when that has a
      fixed unit amplitude, e.g. ``ConstantKernel(2.0) * RBF()`` → ``RBF(variance=2.0)``.

    With ``free_amplitude=True`` (what the estimators' ``kernel`` parameter does, through
    :func:`as_lvgp_kernel`) the amplitude of every summand without a ``ConstantKernel``
    factor is learned: ``RBF()`` → ``RBF(variance=1.0)`` with ``variance_bounds=(1e-5, 1e5)``,
    ``RBF() * ExpSineSquared()`` frees the first factor's variance only, and
    ``DotProduct()`` frees the :class:`Linear` ``variances``. A summand with a
    ``ConstantKernel`` keeps that constant's bounds, so ``ConstantKernel(1.0, "fixed") * RBF()``
    keeps a fixed unit amplitude. The matrices at the starting values are the same either way.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The kernel to convert; it is not modified.
    free_amplitude : bool, default=False
        Learn the amplitude of each summand that has no ``ConstantKernel`` factor (one more
        free hyperparameter per such summand); ``False`` is the exact equivalent, with the
        same free hyperparameters as ``kernel``.

    Returns
    -------
    kernel : sklearn_lvgp.kernels.Kernel
        A new kernel, independent of the input.

    Raises
    ------
    TypeError
        If ``kernel`` (or a part of it) has no sklearn_lvgp equivalent, e.g. ``Matern`` with
        another ``nu``, ``PairwiseKernel``, ``Exponentiation``, ``CompoundKernel`` or a
        subclass of a supported kernel; the message names it.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, RBF, WhiteKernel
    >>> from sklearn_lvgp.kernels import from_sklearn
    >>> from_sklearn(ConstantKernel(2.0) * RBF(1.5) + WhiteKernel(0.1))
    RBF(variance=2, length_scale=1.5) + White(noise_level=0.1)
    """
    units = set()
    converted = _convert(kernel, units)
    if free_amplitude:
        _free_amplitudes(converted, units)
    return converted


def _sk_summands(kernel):
    if type(kernel) is skk.Sum:
        return _sk_summands(kernel.k1) + _sk_summands(kernel.k2)
    return [kernel]


def split_white(kernel):
    """A scikit-learn sum kernel without its ``WhiteKernel`` summands, and their noise.

    Parameters
    ----------
    kernel : object
        Any value of a ``kernel`` parameter; it is not modified.

    Returns
    -------
    rest : object
        ``kernel`` itself unless it is a scikit-learn ``Sum`` with at least one
        ``WhiteKernel`` summand and at least one other summand; then the sum of the other
        summands (the user's kernel objects, not copies).
    noise_level : float or None
        The summed ``noise_level`` of the removed ``WhiteKernel`` summands, ``None`` if none.
    """
    if type(kernel) is not skk.Sum:
        return kernel, None
    terms = _sk_summands(kernel)
    white = [t for t in terms if type(t) is skk.WhiteKernel]
    rest = [t for t in terms if type(t) is not skk.WhiteKernel]
    if not white or not rest:
        return kernel, None
    out = rest[0]
    for t in rest[1:]:
        out = skk.Sum(out, t)
    return out, float(sum(float(w.noise_level) for w in white))


def _check_hyperparameters(kernel, name):
    """Every hyperparameter finite (positive where it is held in log space), bounds ordered."""
    params = kernel.get_params(deep=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # log of a bad bound: checked below
        try:
            hyperparameters = kernel.hyperparameters
        except ValueError:  # drawn at initialisation (an MLPKernel's network): nothing to check
            return
    for h in hyperparameters:
        value = params.get(h.name)
        if value is None:
            continue
        v = np.asarray(value, dtype=np.float64)
        positive = h.transform == "log"
        if not np.all(np.isfinite(v)) or (positive and np.any(v <= 0)):
            need = "positive and finite" if positive else "finite"
            raise ValueError(f"{name} {kernel!r}: {h.name} must be {need}, got {value!r}.")
        raw = params.get(f"{h.name}_bounds")
        if h.fixed or raw is None:
            continue
        b = np.asarray(raw, dtype=np.float64).reshape(-1, 2)
        if (np.any(np.isnan(b)) or np.any(b[:, 0] >= b[:, 1])
                or (positive and np.any(b[:, 0] <= 0))):
            need = "0 < low < high" if positive else "low < high"
            raise ValueError(f"{name} {kernel!r}: {h.name}_bounds must satisfy {need}, got "
                             f"{raw!r}.")


def _contains_exp_sine_squared(kernel):
    if isinstance(kernel, (skk.Sum, skk.Product)):
        return _contains_exp_sine_squared(kernel.k1) or _contains_exp_sine_squared(kernel.k2)
    return type(kernel) is skk.ExpSineSquared


def as_lvgp_kernel(kernel, name="kernel", input_dim=None):
    """Validate a ``kernel`` parameter, converting a scikit-learn kernel.

    Parameters
    ----------
    kernel : sklearn_lvgp.kernels.Kernel, sklearn.gaussian_process.kernels.Kernel or None
        The value to validate; it is not modified.
    name : str, default="kernel"
        Parameter name used in the error message.
    input_dim : int or None, default=None
        Number of input dimensions the kernel will see, when the caller knows it. A
        scikit-learn ``ExpSineSquared`` converts exactly only in one dimension, so it is
        refused for ``input_dim > 1``.

    Returns
    -------
    kernel : sklearn_lvgp.kernels.Kernel or None
        ``None`` for ``None``, the input itself (not a copy) for a sklearn_lvgp kernel, and
        ``from_sklearn(kernel, free_amplitude=True)`` for a scikit-learn kernel: a summand
        without a ``ConstantKernel`` factor gets a learned amplitude (see :func:`from_sklearn`).

    Raises
    ------
    TypeError
        If ``kernel`` is of another type, or a scikit-learn kernel without an equivalent.
    """
    if kernel is None:
        return None
    if isinstance(kernel, Kernel):
        _check_hyperparameters(kernel, name)
        return kernel
    if isinstance(kernel, skk.Kernel):
        if input_dim is not None and input_dim > 1 and _contains_exp_sine_squared(kernel):
            raise TypeError(
                f"{name}: scikit-learn's ExpSineSquared takes the sine of the Euclidean distance "
                f"and has no exact sklearn_lvgp equivalent on {input_dim} input dimensions; use "
                "sklearn_lvgp.kernels.Periodic (a sum of sines over dimensions) instead.")
        converted = from_sklearn(kernel, free_amplitude=True)
        _check_hyperparameters(converted, name)
        return converted
    raise TypeError(f"{name} must be a sklearn_lvgp.kernels.Kernel or a scikit-learn kernel, "
                    f"got {type(kernel).__name__}.")
