"""
Deep GP on a step function
==========================

A stationary GP assumes the same smoothness everywhere, so a step is hard for it: it either
smooths the jump away or shortens its length scale everywhere and ripples on both flat parts.
A deep GP composes GPs, ``f2(f1(x))``: the first layer can warp the input so that the second
layer sees the jump as a gentle slope. This is the classic demonstration of the doubly-stochastic
variational deep GP of Salimbeni & Deisenroth (2017), fitted here with
:class:`~sklearn_lvgp.DeepGP` (two layers) and compared with a single-layer
:class:`~sklearn_lvgp.SparseGPRegressor` on the predictive mean, predictive samples and held-out
log density.
"""

# %%
# Data
# ----
# 50 noisy training points of ``y = 1[x >= 0.5]`` on ``[0, 1]``, and 500 test points.
import numpy as np

rng = np.random.RandomState(0)


def step(n):
    """Draw ``n`` noisy points of the step."""
    x = rng.uniform(0, 1, (n, 1))
    return x, (x[:, 0] >= 0.5) + 0.01 * rng.randn(n)


X, y = step(50)
X_test, y_test = step(500)

# %%
# Fit both models
# ---------------
# ``DeepGP`` is trained with Adam on a Monte Carlo estimate of its bound: each step propagates
# ``n_samples`` samples of every point through the layers. With 50 points every step uses the
# full batch (``batch_size=None``); ``tol=None`` runs all ``max_iter`` steps.
from sklearn_lvgp import DeepGP, SparseGPRegressor

sgpr = SparseGPRegressor(n_inducing=20, random_state=0).fit(X, y)
dgp = DeepGP(n_layers=2, n_inducing=20, n_samples=10, batch_size=None, max_iter=2000, tol=None,
             random_state=0).fit(X, y)
print(f"sparse GP length scale: {sgpr.kernel_.length_scale[0]:.3f}")

# %%
# Held-out scores
# ---------------
# ``score`` is R² as for every scikit-learn regressor; ``predict_log_density`` judges the whole
# predictive distribution, where the difference is large: the sparse GP must spread its
# uncertainty over the jump and the ripples.
for name, model in [("SparseGPRegressor", sgpr), ("DeepGP, 2 layers", dgp)]:
    print(f"{name:18s} R² {model.score(X_test, y_test):.4f}, "
          f"mean log density {model.predict_log_density(X_test, y_test).mean():.3f}")

# %%
# Predictive means and samples
# ----------------------------
# ``SparseGPRegressor.sample_y`` draws whole functions (jointly over the inputs, without the
# noise), drawn as lines. ``DeepGP.sample_y`` draws from the predictive distribution at each input
# independently, each through its own path through the layers, drawn as dots: they jump at the
# step instead of smearing it.
import matplotlib.pyplot as plt

X_grid = np.linspace(0, 1, 300)[:, None]
x = X_grid[:, 0]
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True, layout="constrained")

samples = sgpr.sample_y(X_grid, n_samples=10, random_state=0)
axes[0].plot(x, samples, color="C0", lw=0.8, alpha=0.5)
axes[0].plot(x, sgpr.predict(X_grid), color="C3", lw=2, label="predictive mean")
axes[0].set_title("SparseGPRegressor: 10 sampled functions")

samples = dgp.sample_y(X_grid, n_samples=10, random_state=0)
axes[1].plot(np.repeat(x, samples.shape[1]), samples.ravel(), ".", color="C0", ms=2,
             alpha=0.4)
axes[1].plot(x, dgp.predict(X_grid), color="C3", lw=2, label="predictive mean")
axes[1].set_title("DeepGP (2 layers): 10 predictive samples per x")

for ax in axes:
    ax.plot(X[:, 0], y, "k.", ms=6, label="training data")
    ax.set_xlabel("x")
    ax.legend(loc="upper left", fontsize=8)
axes[0].set_ylabel("y")
plt.show()
