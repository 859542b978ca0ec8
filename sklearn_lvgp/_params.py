"""Named parameter blocks <-> one flat unconstrained vector, with positivity transforms.

No parameter framework: a :class:`ParamPacker` is a list of blocks ``(name, shape, transform)``.
``transform="log"`` optimises ``log(value)``; its Jacobian is ``value``. ``"identity"`` is used for
blocks that are already unconstrained (latent means, inducing inputs, kernel ``theta``).
"""

from typing import NamedTuple

import numpy as np

__all__ = ["ParamBlock", "ParamPacker"]

_TRANSFORMS = ("identity", "log")


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
            flat[self._slices[b.name]] = np.log(v) if b.transform == "log" else v
        return flat

    def unpack(self, flat):
        """Dict of constrained block values (fresh arrays) from a flat unconstrained vector."""
        out = {}
        for b in self.blocks:
            v = flat[self._slices[b.name]].reshape(b.shape)
            out[b.name] = np.exp(v) if b.transform == "log" else v.copy()
        return out

    def pack_grad(self, grads, values):
        """Gradient wrt the flat unconstrained vector.

        Parameters
        ----------
        grads : dict
            Gradient wrt each block's constrained value.
        values : dict
            The constrained values at which ``grads`` were taken (for the log Jacobian).
        """
        flat = np.empty(self.size)
        for b in self.blocks:
            g = np.asarray(grads[b.name], dtype=np.float64).reshape(-1)
            if b.transform == "log":
                g = g * np.asarray(values[b.name], dtype=np.float64).reshape(-1)
            flat[self._slices[b.name]] = g
        return flat

    def slice(self, name):
        """The slice of block ``name`` in the flat vector."""
        return self._slices[name]
