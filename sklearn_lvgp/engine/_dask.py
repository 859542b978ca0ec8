"""The chunked engine on Dask: chunk passes run as tasks where the row partitions live.

A fit given a :class:`dask.array.Array` (or a dask DataFrame) keeps its rows partitioned: the
data are persisted once (on the active ``dask.distributed`` client, or by dask's default
scheduler), and each evaluation of a collapsed bound sends only global-sized messages — the
kernel, Z, the M × M factors of the global step — to the partitions, whose tasks return the
O(M² + M·D) partial statistics and the partial gradients of the globals (Gal, van der Wilk &
Rasmussen 2014). The partitions play the role of the in-memory engine's chunks, and their
partials are added in partition order, so a fit is deterministic for a fixed partitioning.

For a GPLVM the local q(x_n) stay partitioned too: the alternating optimiser's local step runs
as one task per partition, and its results stay on the workers (persisted) for the next global
step; only the fitted latent means and variances are gathered at the end.
"""

import numpy as np

from .._core.parallel import serial_section
from ..bounds._collapsed import (
    kernel_chunk_grads,
    kernel_chunk_stats,
    kernel_finish,
    kernel_global_step,
    kernel_prior,
    psi_chunk_grads,
    psi_chunk_stats,
    psi_finish,
    psi_global_step,
)
from ..bounds._dsvi import (
    chunk_pass,
    dsvi_draws,
    dsvi_finish,
    dsvi_globals,
    dsvi_rows,
    thread_layer_workspaces,
)
from ..optim._alternating import local_step
from ..variational._kl_diagonal import standard_normal_kl_and_vjp
from ._executor import reduce_in_order, serial_global_steps

__all__ = ["is_dask_collection", "DaskRows", "DaskKernelBound", "DaskPsiBound", "DaskDSVI",
           "map_row_blocks"]


def is_dask_collection(X):
    """Whether ``X`` is a dask collection (checked without importing dask)."""
    module = type(X).__module__ or ""
    return module.startswith("dask") and hasattr(X, "__dask_graph__")


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is an optional extra
        raise ImportError("Fitting on dask collections needs dask: "
                          "pip install 'sklearn_lvgp[dask]'.") from exc
    return dask, da


def _as_2d_array(X, name):
    """A float64, 2-D dask array of a dask array or DataFrame, one chunk across columns."""
    dask, da = _dask()
    columns = None
    if hasattr(X, "to_dask_array"):  # a dask DataFrame or Series
        columns = list(X.columns) if hasattr(X, "columns") else None
        X = X.to_dask_array(lengths=True)
    elif not isinstance(X, da.Array):  # in-memory targets next to a dask X
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
        X = da.from_array(X, chunks=X.shape or (1,))
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got a dask array with {X.ndim} dimensions.")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes; call compute_chunk_sizes() first.")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
    return X.astype(np.float64).rechunk({1: -1}), columns


class DaskRows:
    """Row partitions of aligned dask arrays, persisted once and validated.

    Parameters
    ----------
    arrays : dict of str to dask array or DataFrame
        The arrays (same number of rows); the first one's row chunks are the partitions.

    Attributes
    ----------
    n_rows : int
    shapes : dict of str to tuple
    parts : dict of str to list of dask.delayed.Delayed
        One delayed block per partition and array.
    columns : list or None
        Column names of the first array when it was a DataFrame.
    """

    def __init__(self, arrays):
        dask, da = _dask()
        names = list(arrays)
        converted = {}
        self.columns = None
        for i, name in enumerate(names):
            A, columns = _as_2d_array(arrays[name], name)
            if i == 0:
                self.columns = columns
                row_chunks = A.chunks[0]
            elif A.shape[0] != sum(row_chunks):
                raise ValueError(f"{name} has {A.shape[0]} rows but {names[0]} has "
                                 f"{sum(row_chunks)}.")
            converted[name] = A.rechunk({0: row_chunks})
        persisted = dask.persist(*converted.values())
        ok = dask.compute(*[da.isfinite(A).all() for A in persisted])
        for name, good in zip(names, ok, strict=True):
            if not good:
                raise ValueError(f"Input {name} contains NaN or infinity.")
        self.arrays = dict(zip(names, persisted, strict=True))
        self.n_rows = int(sum(row_chunks))
        self.shapes = {k: v.shape for k, v in self.arrays.items()}
        self.row_chunks = tuple(int(c) for c in row_chunks)
        self.parts = {k: list(v.to_delayed().ravel()) for k, v in self.arrays.items()}

    @property
    def n_partitions(self):
        """Number of row partitions."""
        return len(self.row_chunks)

    def map(self, fn, names, shared, extra_parts=None):
        """Delayed ``fn(*blocks, shared)`` per partition (blocks of ``names``, then extras)."""
        dask, _ = _dask()
        shared = dask.delayed(shared, traverse=False)
        columns = [self.parts[n] for n in names] + list(extra_parts or [])
        task = dask.delayed(_serial_task, pure=True)
        return [task(fn, *blocks, shared) for blocks in zip(*columns, strict=True)]

    def map_reduce(self, fn, names, shared, extra_parts=None):
        """Sum over partitions (in partition order) of ``fn(*blocks, shared)``."""
        dask, _ = _dask()
        return reduce_in_order(list(dask.compute(*self.map(fn, names, shared, extra_parts))))


def _serial_task(fn, *args):
    """Run a chunk function inside a Dask task: serially (the workers are the parallelism)."""
    *blocks, shared = args
    with serial_section():
        return fn(*blocks, *shared)


# ------------------------------------------------------------------- deterministic inputs

def _kernel_stats_task(X, Y, kernel, Z, prior):
    return kernel_chunk_stats(kernel, Z, prior, X, Y)[0]


def _kernel_grads_task(X, Y, kernel, Z, prior, step):
    return kernel_chunk_grads(kernel, Z, prior, step, X, Y)


class DaskKernelBound:
    """:class:`~sklearn_lvgp.engine.CollapsedKernelBound` over the partitions of ``rows``
    (arrays ``"X"`` and ``"y"``)."""

    def __init__(self, rows):
        self.rows = rows

    @serial_global_steps
    def evaluate(self, kernel, Z, noise_variance, *, jitter=1e-6, max_tries=0, need_Z=True):
        """As :meth:`CollapsedKernelBound.evaluate`, each map a round of Dask tasks."""
        N, D = self.rows.n_rows, self.rows.shapes["y"][1]
        prior = kernel_prior(kernel, Z, noise_variance, jitter=jitter, max_tries=max_tries)
        stats = self.rows.map_reduce(_kernel_stats_task, ("X", "y"), (kernel, Z, prior))
        step = kernel_global_step(N, D, prior, stats, max_tries=max_tries)
        partials = self.rows.map_reduce(_kernel_grads_task, ("X", "y"),
                                        (kernel, Z, prior, step))
        return kernel_finish(kernel, prior, step, partials, need_Z=need_Z)


# --------------------------------------------------------------- Gaussian (latent) inputs

def _psi_stats_task(Y, mu, S, kernel, Z, rule):
    return psi_chunk_stats(kernel, Z, rule, mu, S, Y)[0]


def _psi_grads_task(Y, mu, S, kernel, Z, rule, adj, dPY_T):
    return psi_chunk_grads(kernel, Z, rule, mu, S, Y, adj, dPY_T, need_local=False)[1]


def _local_task(Y, mu, S, kernel, Z, rule, post):
    return np.stack(local_step(kernel, Z, rule, post, mu, S, Y))


def _kl_task(mu, S):
    return standard_normal_kl_and_vjp(mu, S)[0]


class DaskPsiBound:
    """The chunked collapsed GPLVM bound over the partitions of ``rows`` (array ``"Y"``),
    with the q(x_n) partitioned alongside (set by :meth:`set_locals`, updated by
    :meth:`local_step`)."""

    def __init__(self, rows):
        self.rows = rows
        self._mu = self._S = self._held = None

    def set_locals(self, mu, S):
        """Partition the q(x_n) (``(N, Q)`` numpy or dask arrays) like the data; persist."""
        dask, da = _dask()
        chunks = (self.rows.row_chunks, (mu.shape[1],))
        mu_d, S_d = dask.persist(da.asarray(mu).rechunk(chunks), da.asarray(S).rechunk(chunks))
        self._held = (mu_d, S_d)  # the persisted arrays keep their blocks alive
        self._mu = list(mu_d.to_delayed().ravel())
        self._S = list(S_d.to_delayed().ravel())

    def locals(self):
        """The q(x_n) gathered to the driver: ``(mu, S)``."""
        dask, _ = _dask()
        mu, S = dask.compute(self._mu, self._S)
        return np.vstack(mu), np.vstack(S)

    @serial_global_steps
    def evaluate(self, kernel, Z, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """Bound F, gradients of the globals (Z, θ, σ²) and q(u), the q(x_n) held fixed."""
        N, D = self.rows.n_rows, self.rows.shapes["Y"][1]
        extra = [self._mu, self._S]
        stats = self.rows.map_reduce(_psi_stats_task, ("Y",), (kernel, Z, rule), extra)
        step = psi_global_step(kernel, Z, N, D, stats, noise_variance, jitter=jitter,
                               max_tries=max_tries)
        partials = self.rows.map_reduce(_psi_grads_task, ("Y",),
                                        (kernel, Z, rule, step.adj, step.dPY_T), extra)
        return psi_finish(kernel, step, partials)

    def kl(self):
        """Σ_n KL(q(x_n) ‖ N(0, I)), summed over the partitions."""
        dask, _ = _dask()
        tasks = [dask.delayed(_kl_task, pure=True)(m, v) for m, v in zip(self._mu, self._S,
                                                                        strict=True)]
        return reduce_in_order(list(dask.compute(*tasks)))

    def local_step(self, kernel, Z, rule, post):
        """Improve every partition's q(x_n) on its worker; the results stay there."""
        dask, _ = _dask()
        tasks = self.rows.map(_local_task, ("Y",), (kernel, Z, rule, post),
                              [self._mu, self._S])
        stacked = dask.persist(*tasks)
        self._held = stacked
        self._mu = [s[0] for s in stacked]
        self._S = [s[1] for s in stacked]


# -------------------------------------------------------------------------- deep GP (DSVI)

def _dsvi_task(X, Y, rows, eps, model, layers, priors, noise, scale, S):
    # the worker thread's buffers, kept from one step's task to the next (as a chunk worker's)
    return chunk_pass(model, layers, priors, noise, X[rows], Y[rows], scale, S, eps,
                      thread_layer_workspaces(model.n_layers))


class DaskDSVI:
    """The doubly-stochastic deep-GP bound with its rows on Dask (arrays ``"X"``, ``"y"``).

    A minibatch is a set of row indices; each partition that holds some of them evaluates their
    data term and its partial adjoints where the partition lives (data-parallel minibatch
    gradients), and the driver adds the partials in partition order and does the global terms
    (prior factors, KLs). Per step the tasks receive the model's parameters and the minibatch's
    Monte Carlo draws, never the data.
    """

    def __init__(self, rows):
        self.rows = rows
        self.offsets = np.concatenate([[0], np.cumsum(rows.row_chunks)])

    @serial_global_steps
    def elbo(self, model, x, idx, scale, n_samples, random_state):
        """ELBO estimate and gradient on the rows ``idx`` (as ``_DSVI.elbo`` on ``X[idx]``)."""
        dask, _ = _dask()
        layers, noise, values, priors, kls = dsvi_globals(model, x)
        idx = np.asarray(idx)
        n, L = idx.size, model.n_layers
        S = n_samples if (model.expectation == "monte_carlo" and L > 1) else 1
        eps = dsvi_draws(model, n, S, random_state)
        part = np.searchsorted(self.offsets, idx, side="right") - 1
        shared = dask.delayed((model, layers, priors, noise, scale, S), traverse=False)
        task = dask.delayed(_serial_task, pure=True)
        tasks = []
        for p in range(self.rows.n_partitions):
            pos = np.flatnonzero(part == p)
            if pos.size:
                tasks.append(task(_dsvi_task, self.rows.parts["X"][p], self.rows.parts["y"][p],
                                  idx[pos] - self.offsets[p], dsvi_rows(eps, n, S, pos), shared))
        partials = reduce_in_order(list(dask.compute(*tasks)))
        return dsvi_finish(model, layers, priors, kls, values, partials)


def _block_outputs(fn, block, n_outputs):
    with serial_section():
        out = fn(block)
    return out if n_outputs > 1 else (out,)


def map_row_blocks(fn, X, out_columns, n_outputs=1):
    """Apply a row-wise ``fn`` (an estimator's ``predict``/``transform``) to each partition.

    Parameters
    ----------
    fn : callable
        ``fn(block)`` on an in-memory ``(rows, n_features)`` block; returns one array or a
        tuple of ``n_outputs`` arrays with ``rows`` leading entries.
    X : dask array or DataFrame
        Rows.
    out_columns : int or None
        Trailing size of each output (``None``: 1-D outputs).
    n_outputs : int, default=1
        Number of arrays ``fn`` returns.

    Returns
    -------
    dask array or tuple of dask arrays
        Lazily computed outputs, partitioned like ``X``.
    """
    dask, da = _dask()
    X, _ = _as_2d_array(X, "X")
    blocks = X.to_delayed().ravel()
    outs = [[] for _ in range(n_outputs)]
    for block, rows in zip(blocks, X.chunks[0], strict=True):
        res = dask.delayed(_block_outputs, nout=n_outputs)(fn, block, n_outputs)
        for k in range(n_outputs):
            shape = (rows,) if out_columns is None else (rows, out_columns)
            outs[k].append(da.from_delayed(res[k], shape=shape, dtype=np.float64))
    arrays = tuple(da.concatenate(o, axis=0) for o in outs)
    return arrays if n_outputs > 1 else arrays[0]
