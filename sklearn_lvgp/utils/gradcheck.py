"""Finite-difference checks of gradients and vector-Jacobian products.

Central differences in float64 with a step relative to each coordinate
(``eps * max(1, |x|)``), compared with a relative tolerance. Random output weights turn a
multi-output forward pass into a scalar (the ``w1/w2/w3`` trick), so one VJP call is checked
against finite differences of ``sum(w * forward(x))``.
"""

import numpy as np

__all__ = ["fd_gradient", "check_grad", "check_vjp"]


def fd_gradient(f, x, eps=1e-6):
    """Central finite-difference gradient of a scalar function.

    Parameters
    ----------
    f : callable
        ``f(x) -> float`` for an array ``x`` of any shape.
    x : ndarray
        Point (not modified).
    eps : float, default=1e-6
        Relative step: ``h_i = eps * max(1, |x_i|)``.

    Returns
    -------
    grad : ndarray of the shape of ``x``
        The finite-difference gradient.
    """
    x = np.array(x, dtype=np.float64)
    flat = x.reshape(-1)
    g = np.zeros_like(flat)
    for i in range(flat.size):
        h = eps * max(1.0, abs(flat[i]))
        old = flat[i]
        flat[i] = old + h
        fp = f(x)
        flat[i] = old - h
        fm = f(x)
        flat[i] = old
        g[i] = (fp - fm) / (2.0 * h)
    return g.reshape(x.shape)


def _rel_error(a, b, atol):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0), atol)
    return float(np.max(np.abs(a - b), initial=0.0) / scale)


def check_grad(fun, x, eps=1e-6, rtol=1e-5, atol=1e-8):
    """Compare ``fun(x) -> (value, grad)`` with central differences of ``value``.

    Parameters
    ----------
    fun : callable
        Objective returning its value and gradient.
    x : ndarray
        Point at which to check.
    eps, rtol, atol : float
        Step, relative tolerance (against the largest gradient entry) and absolute floor.

    Returns
    -------
    error : float
        Maximum absolute difference relative to the largest gradient entry.

    Raises
    ------
    AssertionError
        If ``error > rtol``.
    """
    _, grad = fun(np.array(x, dtype=np.float64))
    num = fd_gradient(lambda z: fun(z)[0], x, eps)
    err = _rel_error(grad, num, atol)
    if err > rtol:
        worst = int(np.argmax(np.abs(np.asarray(grad) - num)))
        raise AssertionError(
            f"gradient mismatch: relative error {err:.2e} > {rtol:.1e}; worst entry {worst}: "
            f"analytic {np.ravel(grad)[worst]:.6e} vs numeric {np.ravel(num)[worst]:.6e}")
    return err


def check_vjp(forward, backward, inputs, rng, eps=1e-6, rtol=1e-5, atol=1e-8):
    """Check a VJP against finite differences with random output weights.

    Parameters
    ----------
    forward : callable
        ``forward(**inputs) -> ndarray or tuple of ndarray``.
    backward : callable
        ``backward(weights, **inputs) -> dict`` mapping input names to adjoints, where
        ``weights`` has the structure of ``forward``'s output (the upstream adjoint).
    inputs : dict of name -> ndarray
        The point; only names returned by ``backward`` are checked.
    rng : numpy.random.Generator or RandomState
        Source of the random output weights.
    eps, rtol, atol : float
        As in :func:`check_grad`.

    Returns
    -------
    errors : dict
        Relative error per checked input.

    Raises
    ------
    AssertionError
        If any input's error exceeds ``rtol``.
    """
    inputs = {k: np.array(v, dtype=np.float64) for k, v in inputs.items()}
    out = forward(**inputs)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    weights = tuple(rng.standard_normal(np.shape(o)) for o in outs)

    def scalar(**kw):
        o = forward(**kw)
        o = (o,) if single else o
        return float(sum(np.sum(w * np.asarray(oi)) for w, oi in zip(weights, o, strict=True)))

    adj = backward(weights[0] if single else weights, **inputs)
    errors = {}
    for name, a in adj.items():
        if a is None:
            continue

        def f(v, name=name):
            kw = dict(inputs)
            kw[name] = v
            return scalar(**kw)

        num = fd_gradient(f, inputs[name], eps)
        errors[name] = _rel_error(a, num, atol)
    bad = {k: v for k, v in errors.items() if v > rtol}
    if bad:
        raise AssertionError(f"VJP mismatch (relative errors {bad}, rtol {rtol:.1e})")
    return errors
