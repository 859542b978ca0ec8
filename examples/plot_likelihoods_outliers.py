"""
Robust regression: a Student-t likelihood against outliers
==========================================================

A Gaussian likelihood pays a quadratic price for every residual, so a few gross outliers in
the training targets pull the fit towards them and inflate its noise variance. A Student-t
likelihood has heavy tails: a residual many scales away costs only logarithmically, and the fit
follows the bulk of the data. The Student-t likelihood is one of the non-conjugate likelihoods of
Salimbeni (2020), ch. 3; the outlier protocol below is ours.

Data: ``x ~ U(-2, 2)``, ``y = sin 2x + 0.3x + 0.1 ε`` (200 training rows, 500 test rows), and
5 % of the training targets shifted by ±10 standard deviations of ``y``
(:func:`~sklearn_lvgp.datasets.add_target_outliers`). Two one-layer ``DeepGP`` models (SVGP,
20 inducing inputs, 300 Adam steps), one with the default Gaussian likelihood and one with
``StudentT()`` (its defaults: 4 degrees of freedom, scale learned). Test RMSE is measured on
the clean test rows. The seed tier of the test suite checks the same comparison on five seeds
of this generator and on five splits of UCI boston.

The figure is written to ``examples/output/likelihoods_outliers.png`` (shown in the user guide,
"Likelihoods and classification"). Runs in well under a minute.
"""

# %%
# Data with outliers
# ------------------
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import DeepGP
from sklearn_lvgp.datasets import add_target_outliers
from sklearn_lvgp.likelihoods import StudentT

OUT = Path(__file__).resolve().parent / "output" if "__file__" in globals() else Path("output")
OUT.mkdir(exist_ok=True)

rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, size=(700, 1))
y = np.sin(2 * x[:, 0]) + 0.3 * x[:, 0] + 0.1 * rng.standard_normal(700)
X, X_test, y_clean, y_test = x[:200], x[200:], y[:200], y[200:]
y_train, outliers = add_target_outliers(y_clean, fraction=0.05, magnitude=10.0, random_state=0)
print(f"{outliers.sum()} of {len(y_train)} training targets are outliers")

# %%
# Gaussian and Student-t fits
# ---------------------------
# Same model and budget; only the likelihood differs.
settings = {"n_layers": 1, "n_inducing": 20, "max_iter": 300, "random_state": 0}
models = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # a short, fixed Adam budget
    models["Gaussian"] = DeepGP(**settings).fit(X, y_train)
    models["Student-t"] = DeepGP(likelihood=StudentT(), **settings).fit(X, y_train)

for name, model in models.items():
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    print(f"{name:10s} test RMSE on clean rows: {rmse:.3f}")
print("fitted Student-t scale:", round(models["Student-t"].likelihood_.scale, 4),
      "(standardised units)")

# %%
# Figure
# ------
grid = np.linspace(-2, 2, 300)[:, None]
truth = np.sin(2 * grid[:, 0]) + 0.3 * grid[:, 0]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
for ax, zoom in zip(axes, (False, True), strict=True):
    ax.scatter(X[~outliers, 0], y_train[~outliers], s=8, c="0.6", label="training rows")
    ax.scatter(X[outliers, 0], y_train[outliers], s=30, marker="x", c="k", label="outliers")
    ax.plot(grid[:, 0], truth, "k--", lw=1, label="true function")
    for (name, model), color in zip(models.items(), ("tab:red", "tab:blue"), strict=True):
        mean, std = model.predict(grid, return_std=True)
        ax.plot(grid[:, 0], mean, color=color, lw=2, label=f"{name} likelihood")
        if zoom:
            ax.fill_between(grid[:, 0], mean - 2 * std, mean + 2 * std, color=color, alpha=0.15)
    if zoom:
        ax.set_ylim(-2.5, 2.5)
        ax.set_title("zoom, with ± 2 predictive standard deviations")
    else:
        ax.set_title("training data: 5 % of targets shifted by ± 10 sd")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=5, fontsize=9)
fig.tight_layout(rect=(0, 0.08, 1, 1))
fig.savefig(OUT / "likelihoods_outliers.png", dpi=110)
