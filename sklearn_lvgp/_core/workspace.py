"""Buffers that a training loop reuses across evaluations of its objective.

An optimisation step of a sparse variational layer at ``P`` inputs allocates several ``(M, P)``
arrays, and ``D`` of them for the per-output factors ``B_d = L_d^T A`` that the backward pass
reuses; a GPLVM bound keeps the two-RBF Ψ2 entries, ``N M (M + 1) / 2`` numbers in chunks of
256 KiB, for its backward pass. glibc returns such blocks to the kernel when they are freed
(large blocks are ``mmap``-ed, and freed memory at the top of the heap is trimmed), so every
step page-faults them in again, at a cost per 4 KiB page that is a visible share of a small
step, and far more when transparent huge pages are not available to the process
(``doc/developers.rst``, "Fresh pages"). A :class:`Workspace` keeps those buffers between steps.

Contract: an array obtained from a workspace stays valid until the same name is requested
again. A forward pass that stores workspace arrays in its cache therefore invalidates the cache
of the previous forward pass with the same workspace: run each backward pass before the next
forward pass, as an optimiser's objective does. A workspace is never pickled with its buffers.
"""

import math
import threading

import numpy as np

__all__ = ["Workspace", "chunk_workspace", "thread_workspace"]


class Workspace:
    """Named float64 scratch buffers, grown on demand and reused.

    Examples
    --------
    >>> from sklearn_lvgp._core.workspace import Workspace
    >>> ws = Workspace()
    >>> a = ws.array("B", (2, 3))
    >>> b = ws.array("B", (3, 2))  # same memory, new shape
    >>> bool(np.shares_memory(a, b))
    True
    """

    def __init__(self):
        self._flat = {}

    def array(self, name, shape):
        """Uninitialised C-contiguous float64 array of ``shape`` in the buffer ``name``.

        Parameters
        ----------
        name : str
            Buffer name; a later request for the same name reuses (and overwrites) it.
        shape : tuple of int
            Shape of the returned array.

        Returns
        -------
        out : ndarray of shape ``shape``
            A view of the buffer, grown (reallocated) when it is too small.
        """
        size = math.prod(shape)
        flat = self._flat.get(name)
        if flat is None or flat.size < size:
            flat = np.empty(size)
            self._flat[name] = flat
        return flat[:size].reshape(shape)

    def child(self, prefix):
        """A view of this workspace whose buffer names all start with ``prefix``.

        For callees that name their buffers without knowing who else uses the workspace (the
        terms of a sum kernel, say): each gets its own prefix.
        """
        return _Scoped(self, f"{prefix}/")

    def __getstate__(self):
        return {"_flat": {}}


class _Scoped:
    """:meth:`Workspace.child`: the same buffers under prefixed names."""

    def __init__(self, root, prefix):
        self._root = root
        self._prefix = prefix

    def array(self, name, shape):
        """:meth:`Workspace.array` of ``prefix + name``."""
        return self._root.array(self._prefix + name, shape)

    def child(self, prefix):
        """A further-prefixed view (:meth:`Workspace.child`)."""
        return _Scoped(self._root, f"{self._prefix}{prefix}/")


_thread_local = threading.local()


def thread_workspace():
    """This Python thread's own :class:`Workspace`, for the chunk engine's passes.

    Each chunk's forward and backward pass uses it from start to end on one thread, so chunks
    running on different threads never share a buffer. Callers take a :meth:`Workspace.child`
    of it so that different objectives do not share names.
    """
    ws = getattr(_thread_local, "ws", None)
    if ws is None:
        ws = _thread_local.ws = Workspace()
    return ws


def chunk_workspace(kept, i, keep, prefix):
    """The workspace of chunk ``i`` of a chunked objective (:mod:`sklearn_lvgp.engine`).

    When the chunks' caches are kept from the forward to the backward map (``keep``), each chunk
    needs buffers of its own: ``kept[i]``, appended to the caller's list on first use and reused
    by later evaluations. Otherwise a chunk's forward and backward pass use this thread's
    workspace, under ``prefix``.
    """
    if not keep:
        return thread_workspace().child(prefix)
    while len(kept) <= i:
        kept.append(Workspace())
    return kept[i]
