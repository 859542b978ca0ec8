"""
Sparse GP regression with inducing inputs and uncertain test inputs
===================================================================

:class:`~sklearn_lvgp.SparseGPRegressor` summarises the training data by a small set of inducing
inputs whose locations are optimised together with the kernel hyperparameters, by maximising the
collapsed variational bound of Titsias (2009). This example fits a noisy 1-D function, picks the
number of inducing inputs by cross-validated log predictive density with ``GridSearchCV``, shows
where the inducing inputs end up, and then asks what happens when the *test* inputs are
themselves uncertain: ``predict(X, X_var=...)`` returns the exact mean and variance of the
prediction averaged over a Gaussian input, which widens the band where the function is steep.
"""

# %%
# Data
# ----
# 300 noisy observations of a wiggly function on ``[-3, 3]``.
import numpy as np


def f(x):
    """The function to learn."""
    return np.sin(2 * x) + 0.3 * x


rng = np.random.RandomState(0)
X = rng.uniform(-3, 3, (300, 1))
y = f(X[:, 0]) + 0.2 * rng.randn(300)

# %%
# Choosing the number of inducing inputs
# --------------------------------------
# The estimator follows the scikit-learn API, so model selection tools apply as they are.
# ``scoring="log_predictive_density"`` (a name importing sklearn_lvgp registers) scores a
# held-out fold by its mean log predictive density, which judges the predictive variance as
# well as the mean.
from sklearn.model_selection import GridSearchCV

from sklearn_lvgp import SparseGPRegressor

search = GridSearchCV(SparseGPRegressor(random_state=0), {"n_inducing": [5, 10, 20, 40]},
                      scoring="log_predictive_density", cv=5).fit(X, y)
for m, score in zip(search.cv_results_["param_n_inducing"],
                    search.cv_results_["mean_test_score"], strict=True):
    print(f"n_inducing = {m:2d}: mean held-out log density {score:.3f}")
model = search.best_estimator_
print(f"chosen: {search.best_params_}; fitted kernel {model.kernel_}, "
      f"noise variance {model.noise_variance_:.4f}")

# %%
# Uncertain test inputs
# ---------------------
# If a test input is only known up to Gaussian noise, ``x* ~ N(m, s²)``, the prediction should
# average over it. ``X_var`` gives ``s²`` per input and column; the predictive mean and standard
# deviation are then exact moments of that average (for the RBF kernel in closed form).
X_grid = np.linspace(-3.5, 3.5, 300)[:, None]
mean, std = model.predict(X_grid, return_std=True)
input_std = 0.3
mean_u, std_u = model.predict(X_grid, X_var=np.full_like(X_grid, input_std ** 2),
                              return_std=True)
print(f"mean predictive std: known inputs {std.mean():.3f}, "
      f"inputs with std {input_std} {std_u.mean():.3f}")

# %%
# A Monte Carlo check at one point: draw inputs from ``N(1, 0.3²)``, predict at each draw and take
# the moments of the resulting mixture.
x_draws = 1.0 + input_std * rng.randn(20000, 1)
m_draws, s_draws = model.predict(x_draws, return_std=True)
mc_mean, mc_std = m_draws.mean(), np.sqrt(np.mean(s_draws ** 2) + m_draws.var())
exact_mean, exact_std = model.predict([[1.0]], X_var=[[input_std ** 2]], return_std=True)
print(f"at x = 1: exact {exact_mean[0]:.3f} ± {exact_std[0]:.3f}, "
      f"Monte Carlo {mc_mean:.3f} ± {mc_std:.3f}")

# %%
# Plot
# ----
# Top: the fit with ± 2 standard deviations and the inducing inputs (``inducing_inputs_``).
# Bottom: the predictive standard deviation with known and with uncertain inputs; the extra
# uncertainty follows the slope of the function.
import matplotlib.pyplot as plt

fig, (ax, ax_std) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                 gridspec_kw={"height_ratios": [2, 1]})
x = X_grid[:, 0]
ax.plot(X[:, 0], y, "k.", ms=3, alpha=0.5, label="data")
ax.plot(x, f(x), "k--", lw=1, label="true function")
ax.fill_between(x, mean_u - 2 * std_u, mean_u + 2 * std_u, color="C1", alpha=0.25,
                label=f"± 2 std, input std {input_std}")
ax.fill_between(x, mean - 2 * std, mean + 2 * std, color="C0", alpha=0.35,
                label="± 2 std, known input")
ax.plot(x, mean, color="C0", label="predictive mean")
Z = model.inducing_inputs_[:, 0]
ax.plot(Z, np.full_like(Z, ax.get_ylim()[0]), "r^", ms=8, clip_on=False,
        label=f"{Z.size} inducing inputs")
ax.legend(fontsize=8, ncol=2, loc="upper left")
ax.set_ylabel("y")
ax_std.plot(x, std, color="C0", label="known input")
ax_std.plot(x, std_u, color="C1", label=f"input std {input_std}")
ax_std.set_xlabel("x")
ax_std.set_ylabel("predictive std")
ax_std.legend(fontsize=8)
fig.tight_layout()
plt.show()
