"""Named parameter blocks <-> one flat unconstrained vector, with positivity transforms.

No parameter framework: a :class:`ParamPacker` is a list of blocks ``(name, shape, transform)``.
``transform="log"`` optimises ``log(value)``; its Jacobian is ``value``. ``"softplus"`` optimises
``r`` with ``value = log(1 + exp(r))`` (GPy's and GPflow's positivity transform); its Jacobian is
``sigmoid(r)``. ``"identity"`` is used for blocks that are already unconstrained (latent means,
inducing inputs, kernel ``theta``).
"""

from typing import NamedTuple

import numpy as np

__all__ = ["ParamBlock", "ParamPacker", "softplus", "softplus_inverse"]

_TRANSFORMS = ("identity", "log", "softplus")


def softplus(r):
    """``log(1 + exp(r))`` without overflow."""
    return np.logaddexp(0.0, r)


def softplus_inverse(v):
    """``r`` with ``softplus(r) = v`` for ``v > 0``, stable for large and tiny ``v``."""
    v = np.asarray(v, dtype=np.float64)
    return v + np.log(-np.expm1(-v))


def _to_free(v, transform):
    if transform == "log":
        return np.log(v)
    if transform == "softplus":
        return softplus_inverse(v)
    return v


def _from_free(r, transform):
    if transform == "log":
        return np.exp(r)
    if transform == "softplus":
        return softplus(r)
    return r.copy()


class ParamBlock(NamedTuple):
    """One named block of the flat parameter vector."""

    name: str
    shape: tuple
    transform: str = "identity"

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


class ParamPacker:
    """Map named constrained parameter blocks to a flat unconstrained vector and back.

    Parameters
    ----------
    blocks : list of ParamBlock or tuple
        ``(name, shape, transform)`` for each block, in packing order.
    """

    def __init__(self, blocks):
        self.blocks = [ParamBlock(b[0], tuple(b[1]), *b[2:]) for b in blocks]
        for b in self.blocks:
            if b.transform not in _TRANSFORMS:
                raise ValueError(f"unknown transform {b.transform!r} for block {b.name!r}")
        self._slices = {}
        start = 0
        for b in self.blocks:
            self._slices[b.name] = slice(start, start + b.size)
            start += b.size
        self.size = start

    def pack(self, values):
        """Flat unconstrained vector from a dict of constrained block values."""
        flat = np.empty(self.size)
        for b in self.blocks:
            v = np.asarray(values[b.name], dtype=np.float64).reshape(-1)
            flat[self._slices[b.name]] = _to_free(v, b.transform)
        return flat

    def unpack(self, flat):
        """Dict of constrained block values (fresh arrays) from a flat unconstrained vector."""
        out = {}
        for b in self.blocks:
            v = flat[self._slices[b.name]].reshape(b.shape)
            out[b.name] = _from_free(v, b.transform)
        return out

    def pack_grad(self, grads, values):
        """Gradient wrt the flat unconstrained vector.

        Parameters
        ----------
        grads : dict
            Gradient wrt each block's constrained value.
        values : dict
            The constrained values at which ``grads`` were taken (for the Jacobians).
        """
        flat = np.empty(self.size)
        for b in self.blocks:
            out = flat[self._slices[b.name]]
            g = np.asarray(grads[b.name], dtype=np.float64).reshape(-1)
            if b.transform == "identity":
                out[...] = g
                continue
            v = np.asarray(values[b.name], dtype=np.float64).reshape(-1)
            if b.transform == "log":
                np.multiply(g, v, out=out)
            else:  # softplus: sigmoid(r) = 1 - exp(-softplus(r))
                np.multiply(g, -np.expm1(-v), out=out)
        return flat

    def slice(self, name):
        """The slice of block ``name`` in the flat vector."""
        return self._slices[name]

    def box(self, **block_bounds):
        """Box bounds of the flat vector for L-BFGS-B: free (``±inf``) but for the named blocks.

        Parameters
        ----------
        **block_bounds : array-like of shape (2,) or (block size, 2)
            ``(low, high)`` of the unconstrained values of a block, one pair for all of it or
            one per entry.

        Returns
        -------
        bounds : ndarray of shape (size, 2)
        """
        bounds = np.full((self.size, 2), [-np.inf, np.inf])
        for name, pair in block_bounds.items():
            bounds[self._slices[name]] = pair
        return bounds
