"""
DVMGP: a different relevant input in each region
================================================

A stationary GP uses one set of length scales everywhere. In the data below the target is a
parabola in ``x_1`` for one cluster of inputs and a parabola in ``x_2`` for the other, so no single
set fits both. :class:`~sklearn_lvgp.DVMGP` (deep variational Mahalanobis GP) projects every input
by its own linear map ``z = W(x) x``, whose entries are GPs over ``x``, and can therefore look along
a different direction in each cluster. This example fits it next to a
:class:`~sklearn_lvgp.SparseGPRegressor` with an ARD kernel and compares their held-out errors
and predictive densities.
"""

# %%
# Data
# ----
# :func:`~sklearn_lvgp.datasets.two_parabolas_split` draws two Gaussian clusters of inputs,
# around ``(-1, 1)`` with target ``x_1² + x_1`` and around ``(2, 1)`` with target ``x_2² + x_2``,
# and splits them in half (the data of the DVMGP paper's synthetic experiment).
from sklearn_lvgp.datasets import two_parabolas_split

X_train, X_test, y_train, y_test = two_parabolas_split()
print(f"{len(X_train)} training rows, {len(X_test)} test rows")

# %%
# Fit both models
# ---------------
# Both are fitted by L-BFGS-B on their collapsed bounds. ``n_inducing_projection`` is the number of
# inducing inputs shared by the GPs of the projection ``W(x)``. DVMGP gets a fixed budget
# of 600 L-BFGS-B iterations to keep the example short; they end before its tolerance, and a
# ``ConvergenceWarning`` says so.
from sklearn_lvgp import DVMGP, SparseGPRegressor

sgpr = SparseGPRegressor(n_inducing=50, random_state=0).fit(X_train, y_train)
dvmgp = DVMGP(n_inducing=50, n_inducing_projection=25, max_iter=600, random_state=0)
dvmgp.fit(X_train, y_train)

# %%
# Held-out scores
# ---------------
# The root mean squared error of the predictive mean, and the mean log predictive density (higher
# is better) of the held-out targets.
import numpy as np

for name, model in [("SparseGPRegressor", sgpr), ("DVMGP", dvmgp)]:
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    density = model.predict_log_density(X_test, y_test).mean()
    print(f"{name:17s} RMSE {rmse:.3f}, mean log density {density:.3f}")

# %%
# Where each model errs
# ---------------------
# The left panel shows the data; the others show each model's absolute error on a grid over the
# two clusters, with the training inputs on top. The true target on the grid is that of the nearer
# cluster centre, so it jumps at ``x_1 = 0.5``, between the clusters, where neither model has
# data: the band of large errors there is that jump.
import matplotlib.pyplot as plt


def truth(X):
    """The target of the nearer cluster centre."""
    first = np.sum((X - [-1, 1]) ** 2, 1) < np.sum((X - [2, 1]) ** 2, 1)
    return np.where(first, X[:, 0] ** 2 + X[:, 0], X[:, 1] ** 2 + X[:, 1])


g1, g2 = np.meshgrid(np.linspace(-3, 4, 80), np.linspace(-1, 3, 60))
grid = np.column_stack([g1.ravel(), g2.ravel()])
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), sharey=True, layout="constrained")
points = axes[0].scatter(X_train[:, 0], X_train[:, 1], c=y_train, s=15, cmap="viridis")
fig.colorbar(points, ax=axes[0], label="y")
axes[0].set_title("training data")
for ax, (name, model) in zip(axes[1:], [("SparseGPRegressor", sgpr), ("DVMGP", dvmgp)],
                             strict=True):
    error = np.abs(model.predict(grid) - truth(grid)).reshape(g1.shape)
    mesh = ax.pcolormesh(g1, g2, error, vmin=0, vmax=1, cmap="magma_r", shading="auto")
    ax.scatter(X_train[:, 0], X_train[:, 1], s=4, c="k", alpha=0.4)
    ax.set_title(f"{name}: |error|")
fig.colorbar(mesh, ax=axes[1:], label="absolute error")
for ax in axes:
    ax.set_xlabel("$x_1$")
axes[0].set_ylabel("$x_2$")
plt.show()
