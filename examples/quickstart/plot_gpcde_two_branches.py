"""
Conditional density estimation: a target with two branches
==========================================================

A GP regressor predicts a Gaussian ``p(y | x)``. When ``y`` can lie on either of two curves for
the same ``x``, the best Gaussian puts its mean between them, where no data are, and a wide
variance over both. :class:`~sklearn_lvgp.GPCDE` adds an unobserved latent input ``w ~ N(0, 1)``
to the GP, ``y = f(x, w) + noise``; integrating ``w`` out gives a predictive density that can be
skewed, heteroscedastic or, as here, bimodal (GP conditional density estimation, Salimbeni 2020,
PhD thesis, ch. 4). The example compares it with :class:`~sklearn_lvgp.SparseGPRegressor` by the
held-out log predictive density and draws the fitted density.
"""

# %%
# Data
# ----
# ``x ~ U(-2, 2)`` and ``y = ±(sin 2x + 1) + 0.1 ε`` with either sign equally likely: two
# branches that meet at ``x = -π/4``. Two thirds of the rows train the models, the rest score
# them.
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

rng = np.random.RandomState(0)
n = 600
X = rng.uniform(-2, 2, (n, 1))
sign = rng.choice([-1.0, 1.0], n)
y = sign * (np.sin(2 * X[:, 0]) + 1) + 0.1 * rng.randn(n)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=1 / 3, random_state=0)

# %%
# Two models
# ----------
# The best Gaussian model has a mean close to zero: the sparse GP keeps a small kernel variance
# and its noise variance takes up almost all the spread of the two branches. GPCDE with
# ``latent_dim=1`` integrates ``w`` out by Gauss-Hermite quadrature with ``gh_order`` nodes; the
# bound is then deterministic and full-batch L-BFGS (``optimizer="lbfgs"``) maximises it.
# ``max_iter`` is a fixed budget: the bound still creeps up when it ends, so the
# ``ConvergenceWarning`` that says so is silenced.
from sklearn_lvgp import GPCDE, SparseGPRegressor

sgpr = SparseGPRegressor(n_inducing=30, random_state=0).fit(X_train, y_train)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    cde = GPCDE(latent_dim=1, n_inducing=30, gh_order=10, optimizer="lbfgs", max_iter=500,
                random_state=0).fit(X_train, y_train)
print(f"target variance {y_train.var():.3f}")
print(f"sparse GP: kernel {sgpr.kernel_}, noise variance {sgpr.noise_variance_:.3f}")
print(f"GPCDE: {cde.n_iter_} L-BFGS iterations, latent input used: {cde.latent_used_}")

# %%
# Held-out log predictive density
# -------------------------------
# ``predict_log_density(X, y)`` returns ``log p(y_n | x_n)`` per row; its mean over the test set
# (higher is better) is what ``sklearn_lvgp.metrics.log_predictive_density`` computes for
# model selection. The density that generated the data sets the ceiling.
from scipy.stats import norm

from sklearn_lvgp.metrics import log_predictive_density

branch = np.sin(2 * X_test[:, 0]) + 1
lpd_true = np.log(0.5 * norm.pdf(y_test, branch, 0.1) + 0.5 * norm.pdf(y_test, -branch, 0.1))
lpd_sgpr = sgpr.predict_log_density(X_test, y_test).mean()
lpd_cde = cde.predict_log_density(X_test, y_test).mean()
print(f"mean held-out log density: SparseGPRegressor {lpd_sgpr:.3f}, GPCDE {lpd_cde:.3f}, "
      f"true density {lpd_true.mean():.3f}")
print(f"same number from the scorer: {log_predictive_density(cde, X_test, y_test):.3f}")

# %%
# Predictive densities on a grid
# ------------------------------
# Evaluating ``predict_log_density`` at every pair of a grid of ``x`` and ``y`` values draws the
# whole conditional density. The sparse GP spreads one Gaussian over both branches; GPCDE puts
# most of its mass on the two branches, which merge into one narrow peak where they meet. A faint
# ridge left of that point is mass the model has not yet moved onto the branches.
import matplotlib.pyplot as plt

x_grid = np.linspace(-2, 2, 120)
y_grid = np.linspace(-2.6, 2.6, 160)
xx, yy = np.meshgrid(x_grid, y_grid)
pairs_X, pairs_y = xx.ravel()[:, None], yy.ravel()

fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True, layout="constrained")
for ax, model, name, lpd in [(axes[0], sgpr, "SparseGPRegressor", lpd_sgpr),
                             (axes[1], cde, "GPCDE", lpd_cde)]:
    density = np.exp(model.predict_log_density(pairs_X, pairs_y)).reshape(xx.shape)
    mesh = ax.pcolormesh(xx, yy, density, shading="auto", cmap="viridis", vmax=2.0)
    ax.plot(X_train[:, 0], y_train, "w.", ms=2, alpha=0.6)
    ax.set_title(f"{name}: held-out log density {lpd:.2f}", fontsize=10)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
fig.colorbar(mesh, ax=axes, label="p(y | x)")
plt.show()
