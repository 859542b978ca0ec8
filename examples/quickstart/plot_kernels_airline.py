"""
Composing kernels: the airline passengers
=========================================

The kernels of :mod:`sklearn_lvgp.kernels` combine with ``+`` and ``*`` as scikit-learn's do,
and every estimator takes one as ``kernel``. This example fits
:class:`~sklearn_lvgp.SparseGPRegressor` to the monthly airline passenger totals as a function of
time, once with a single RBF kernel and once with a sum that has a term for each visible
structure: a linear trend, a yearly cycle whose shape drifts (periodic times RBF) and a smooth
remainder. The models are fitted to the logarithm of the totals, in which the yearly cycle has
a constant amplitude. The last two years are held out.
"""

# %%
# Data
# ----
# :func:`~sklearn_lvgp.datasets.load_airline` returns the 144 monthly totals of 1949-1960
# (thousands of passengers), bundled with the package. Time is in years since January 1949.
import numpy as np

from sklearn_lvgp.datasets import load_airline

passengers = load_airline()
y = np.log(passengers)
t = (np.arange(len(y)) / 12.0)[:, None]
t_train, t_test, y_train, y_test = t[:-24], t[-24:], y[:-24], y[-24:]

# %%
# Two kernels
# -----------
# Hyperparameters start at the values given and are fitted by L-BFGS-B with the noise variance;
# ``n_inducing=120`` with ``optimize_inducing=False`` makes every training month an inducing
# input, so the sparse GP is the exact GP here. ``normalize_y`` centres and scales the targets.
# The error is in thousands of passengers (the exponential of the predictive mean of the log);
# the log density is that of the log totals.
from sklearn_lvgp import SparseGPRegressor
from sklearn_lvgp.kernels import RBF, Linear, Periodic

kernels = {
    "RBF": RBF(length_scale=1.0),
    "Linear + Periodic * RBF + RBF": (Linear() + Periodic(period=1.0, length_scale=1.0)
                                      * RBF(length_scale=5.0) + RBF(length_scale=1.0)),
}
models = {name: SparseGPRegressor(kernel=kernel, n_inducing=120, optimize_inducing=False,
                                  normalize_y=True, random_state=0).fit(t_train, y_train)
          for name, kernel in kernels.items()}
for name, model in models.items():
    rmse = np.sqrt(np.mean((np.exp(model.predict(t_test)) - np.exp(y_test)) ** 2))
    density = model.predict_log_density(t_test, y_test).mean()
    print(f"{name:30s} test RMSE {rmse:6.1f}, mean log density {density:.2f}")
    print(f"    fitted kernel: {model.kernel_}")

# %%
# Forecasts
# ---------
# The exponential of the predictive mean and of a 95 % band of the log (noise included) over the
# whole series, in thousands of passengers.
import matplotlib.pyplot as plt

t_grid = np.linspace(0, 13, 400)[:, None]
fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True, layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    mean, std = model.predict(t_grid, return_std=True)
    ax.fill_between(t_grid[:, 0] + 1949, np.exp(mean - 1.96 * std), np.exp(mean + 1.96 * std),
                    color="C0", alpha=0.2)
    ax.plot(t_grid[:, 0] + 1949, np.exp(mean), color="C0", label="prediction")
    ax.plot(t_train[:, 0] + 1949, passengers[:-24], "k.", ms=3, label="training months")
    ax.plot(t_test[:, 0] + 1949, passengers[-24:], ".", color="C3", ms=4,
            label="held-out months")
    ax.set_title(name)
    ax.set_xlabel("year")
axes[0].set_ylabel("passengers (thousands)")
axes[0].legend(loc="upper left")
plt.show()
