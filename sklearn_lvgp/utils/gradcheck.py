"""Finite-difference checks of gradients and vector-Jacobian products.

Central differences in float64 with a step relative to each coordinate
(``eps * max(1, |x|)``), compared with a relative tolerance block by block: each parameter
block (each input of a VJP) against its own largest entry. Random output weights turn a
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
    """Largest ``|a - b|`` relative to the block's scale (its largest entry, or ``atol``)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0), atol)
    return float(np.max(np.abs(a - b), initial=0.0) / scale)


def _named_blocks(blocks, size):
    """``{name: flat indices}`` of ``blocks``; entries in no block are blocks of their own."""
    if blocks is None:
        blocks = {}
    elif hasattr(blocks, "slice") and hasattr(blocks, "blocks"):  # a parameter packer
        blocks = {b.name: blocks.slice(b.name) for b in blocks.blocks}
    elif not hasattr(blocks, "items"):
        blocks = {f"block {i}": b for i, b in enumerate(blocks)}
    index = np.arange(size)
    named = {str(name): index[b].reshape(-1) for name, b in blocks.items()}
    covered = np.zeros(size, dtype=bool)
    for idx in named.values():
        covered[idx] = True
    named.update({f"entry {i}": index[i:i + 1] for i in np.flatnonzero(~covered)})
    return named


def check_grad(fun, x, eps=1e-6, rtol=1e-5, atol=1e-8, blocks=None):
    """Compare ``fun(x) -> (value, grad)`` with central differences of ``value``, block by block.

    Each parameter block is judged against its own scale, so an error in a block of small
    entries (a noise variance, a kernel hyperparameter) is not hidden by a block of large ones.

    Parameters
    ----------
    fun : callable
        Objective returning its value and gradient.
    x : ndarray
        Point at which to check.
    eps, rtol, atol : float
        Step, relative tolerance (against the largest entry of each block) and absolute floor
        of each block's scale.
    blocks : mapping, sequence or parameter packer, default=None
        The blocks of the flattened ``x``: a mapping of names to slices (or index arrays,
        boolean masks), a sequence of slices, or an object with ``blocks`` (items with a
        ``name``) and ``slice(name)``, as the packers of the package's bounds. Entries in no
        block, all of them by default, are judged one by one.

    Returns
    -------
    errors : dict of name -> float
        Largest absolute difference in each block relative to that block's largest entry.

    Raises
    ------
    AssertionError
        If the error of any block exceeds ``rtol``.
    """
    _, grad = fun(np.array(x, dtype=np.float64))
    grad = np.ravel(grad)
    num = np.ravel(fd_gradient(lambda z: fun(z)[0], x, eps))
    named = _named_blocks(blocks, grad.size)
    errors = {name: _rel_error(grad[idx], num[idx], atol) for name, idx in named.items()}
    bad = []
    for name, err in errors.items():
        if err > rtol:
            idx = named[name]
            worst = int(idx[np.argmax(np.abs(grad[idx] - num[idx]))])
            bad.append(f"{name}: relative error {err:.2e} > {rtol:.1e}, worst entry {worst}: "
                       f"analytic {grad[worst]:.6e} vs numeric {num[worst]:.6e}")
    if bad:
        raise AssertionError("gradient mismatch: " + "; ".join(bad))
    return errors


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
        As in :func:`check_grad`; each input is a block judged against its own scale.

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
