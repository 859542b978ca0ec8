"""The memory plan of every prediction path: test rows in blocks of bounded size.

Prediction, sampling and held-out scoring stack several evaluation points per test row (Monte
Carlo paths, quadrature nodes, per-point Ψ-statistics); :func:`row_blocks` cuts the rows so that
a block never holds more than a fixed number of them, whatever the number of test rows. (The
training objectives' chunks, which threads share, are planned by
:func:`sklearn_lvgp.engine._executor.plan_chunks`.)
"""

__all__ = ["PREDICT_POINTS", "row_blocks"]

#: Stacked evaluation points per block of a prediction path.
PREDICT_POINTS = 20000


def row_blocks(n_rows, points_per_row=1, budget=None):
    """Consecutive row slices of at most ``budget // points_per_row`` rows (at least one).

    Parameters
    ----------
    n_rows : int
        Number of test rows.
    points_per_row : int, default=1
        Evaluation points stacked per row (paths, nodes, ...).
    budget : int or None, default=None
        Points per block; ``None`` is :data:`PREDICT_POINTS`.

    Returns
    -------
    blocks : list of slice
        Half-open row ranges covering ``0 .. n_rows`` in order.
    """
    budget = PREDICT_POINTS if budget is None else budget
    rows = max(1, int(budget) // max(1, int(points_per_row)))
    return [slice(a, min(int(n_rows), a + rows)) for a in range(0, int(n_rows), rows)]
