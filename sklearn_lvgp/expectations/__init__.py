"""Ψ-statistics: one entry point for closed forms and point-set rules.

``psi_statistics(kernel, Z, mu, S, rule)`` returns ``(PsiStats, cache)`` and
``psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache)`` the adjoints. ``rule`` is ``"analytic"`` or a
:class:`PointRule`. The closed forms are chosen from one explicit registry; asking for
``"analytic"`` with a kernel that has none raises instead of silently falling back — the
estimators resolve ``expectation="auto"`` and record what they used.
"""

from typing import NamedTuple

from ._cross import closed_form_available, sum_psi, sum_psi_vjp
from ._pointset import pointset_psi, pointset_psi_vjp
from ._rules import MAX_GH_POINTS, PointRule, gauss_hermite_rule, monte_carlo_rule, unscented_rule
from ._types import PsiStats, PsiVJP

__all__ = [
    "PsiStats", "PsiVJP", "PointRule", "psi_statistics", "psi_vjp", "has_closed_form",
    "make_rule", "unscented_rule", "gauss_hermite_rule", "monte_carlo_rule", "EXPECTATIONS",
    "MAX_GH_POINTS",
]

#: Valid values of an estimator's ``expectation`` parameter.
EXPECTATIONS = ("auto", "analytic", "unscented", "gauss_hermite", "monte_carlo")


class _Cache(NamedTuple):
    backward: object
    inner: object


def has_closed_form(kernel):
    """Whether closed-form Ψ-statistics exist for ``kernel`` (RBF, linear and their sums).

    Parameters
    ----------
    kernel : Kernel
        The kernel.

    Returns
    -------
    bool
        True when ``rule="analytic"`` is accepted.
    """
    return bool(closed_form_available(kernel))


def make_rule(expectation, kernel, n_dims, *, gh_order=2, n_samples=32, random_state=None,
              n_points=None):
    """Resolve an ``expectation`` name to ``"analytic"`` or a :class:`PointRule`.

    Parameters
    ----------
    expectation : {"auto", "analytic", "unscented", "gauss_hermite", "monte_carlo"}
        ``"auto"`` is ``"analytic"`` where a closed form exists, else ``"unscented"``.
    kernel : Kernel
        The kernel the rule will be used with.
    n_dims : int
        Latent dimension ``Q``.
    gh_order : int, default=2
        Gauss–Hermite order.
    n_samples : int, default=32
        Monte Carlo samples per point.
    random_state : numpy.random.RandomState, default=None
        Source of Monte Carlo nodes.
    n_points : int, default=None
        Independent Monte Carlo nodes per data point when given.

    Returns
    -------
    name : str
        The resolved expectation name.
    rule : "analytic" or PointRule
        The rule to pass to :func:`psi_statistics`.
    """
    if expectation not in EXPECTATIONS:
        raise ValueError(f"expectation must be one of {EXPECTATIONS}, got {expectation!r}.")
    if expectation == "auto":
        expectation = "analytic" if has_closed_form(kernel) else "unscented"
    if expectation == "analytic":
        if not has_closed_form(kernel):
            raise ValueError(
                f"expectation='analytic' needs closed-form Ψ-statistics, which exist only for "
                f"RBF, Linear and their sums; got {kernel!r}. Use 'unscented' or 'auto'.")
        return "analytic", "analytic"
    if expectation == "unscented":
        return "unscented", unscented_rule(n_dims)
    if expectation == "gauss_hermite":
        return "gauss_hermite", gauss_hermite_rule(gh_order, n_dims)
    if random_state is None:
        raise ValueError("expectation='monte_carlo' needs a random_state to draw nodes.")
    return "monte_carlo", monte_carlo_rule(n_samples, n_dims, random_state, n_points)


def psi_statistics(kernel, Z, mu, S, rule, per_point=False, workspace=None, *, need_cache=True,
                   need_psi2=True):
    """Ψ-statistics of ``kernel`` under q(x_n) = N(mu_n, diag(S_n)).

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    mu, S : ndarray of shape (N, Q)
        Means and variances.
    rule : "analytic" or PointRule
        From :func:`make_rule`.
    per_point : bool, default=False
        Per-point ``psi0`` (N,) and ``Psi2`` (N, M, M) instead of sums (for prediction).
    workspace : Workspace, default=None
        Buffers that an optimiser's objective reuses from one evaluation to the next
        (:class:`sklearn_lvgp._core.workspace.Workspace`): the closed forms and the point-set
        rules keep their large intermediate arrays there. A cache built with a workspace is
        valid until the next call with it, so run each backward pass before the next forward
        pass.
    need_cache : bool, default=True
        ``False`` when no backward pass will follow: nothing is kept for one (the chunk
        engine's forward map), and the returned cache is ``None``.
    need_psi2 : bool, default=True
        ``False`` when only the backward pass is wanted (the chunk engine's backward map):
        the statistics may then be ``None``. The closed form of one RBF skips Ψ2 and its
        backward pass recomputes the entries block by block; a point-set rule computes nothing
        and its backward pass recomputes each block's point matrix.

    Returns
    -------
    stats : PsiStats
        ``psi0``, ``Psi1`` (N, M), ``Psi2``.
    cache : object
        Input of :func:`psi_vjp`.
    """
    if isinstance(rule, PointRule):
        stats, inner = pointset_psi(kernel, Z, mu, S, rule, per_point=per_point,
                                    keep=(None if need_cache and need_psi2 else False),
                                    need_psi2=need_psi2, workspace=workspace)
        return stats, (_Cache(pointset_psi_vjp, inner) if need_cache else None)
    if rule != "analytic":
        raise ValueError(f"rule must be 'analytic' or a PointRule, got {rule!r}.")
    # sum_psi raises for a summand without a closed form (naming it and the alternative)
    stats, inner = sum_psi(kernel.summands(), Z, mu, S, per_point=per_point,
                           workspace=workspace, need_cache=need_cache, need_psi2=need_psi2)
    return stats, (_Cache(sum_psi_vjp, inner) if need_cache else None)


def psi_vjp(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache):
    """Backward pass of :func:`psi_statistics`.

    Parameters
    ----------
    dL_dpsi0 : float or ndarray of shape (N,)
        Adjoint of ``psi0``.
    dL_dPsi1 : ndarray of shape (N, M)
        Adjoint of ``Psi1``.
    dL_dPsi2 : ndarray of shape (M, M) or (N, M, M)
        Adjoint of ``Psi2``.
    cache : object
        From :func:`psi_statistics`.

    Returns
    -------
    PsiVJP
        Adjoints of ``mu``, ``S``, ``Z`` and the kernel's ``theta``.
    """
    return cache.backward(dL_dpsi0, dL_dPsi1, dL_dPsi2, cache.inner)
