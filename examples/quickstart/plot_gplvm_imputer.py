"""
Imputing missing values with a GPLVM
====================================

:class:`~sklearn_lvgp.impute.GPLVMImputer` is a scikit-learn imputer built on
:class:`~sklearn_lvgp.UnscentedGPLVM`: the GPLVM is fitted to the observed entries only, every
row gets a latent point inferred from the entries it has, and each missing entry is replaced by
its predictive mean at that latent point. ``transform_std`` gives the predictive standard
deviation of every imputed entry. This example hides 20 % of the entries of data that vary
along a 2-D manifold and compares the imputations with scikit-learn's imputers.
"""

# %%
# Data
# ----
# 300 rows with 12 columns, each a smooth function of two hidden variables plus a little noise;
# 20 % of the entries are hidden completely at random.
import numpy as np

rng = np.random.RandomState(0)
hidden = rng.uniform(-2, 2, (300, 2))
W = rng.randn(2, 12)
X = np.sin(hidden @ W) + 0.5 * (hidden @ W) + 0.05 * rng.randn(300, 12)
mask = rng.rand(*X.shape) < 0.2
X_missing = np.where(mask, np.nan, X)
print(f"{mask.sum()} of {X.size} entries hidden")

# %%
# Impute
# ------
# The imputer takes its GPLVM as ``estimator``, as scikit-learn's ``IterativeImputer`` takes its
# regressor; here a GPLVM with a 2-D latent space and a fixed budget of 300 L-BFGS-B iterations
# (they end before its tolerance, and a ``ConvergenceWarning`` says so). ``IterativeImputer``
# also ends its 10 rounds (its ``max_iter``) before its own stopping criterion and warns. The
# error is the root mean squared error over the hidden entries, each column divided by its
# standard deviation (the column mean scores about 1).
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer

from sklearn_lvgp import UnscentedGPLVM
from sklearn_lvgp.impute import GPLVMImputer

imputers = {
    "SimpleImputer (mean)": SimpleImputer(),
    "KNNImputer": KNNImputer(),
    "IterativeImputer": IterativeImputer(random_state=0),
    "GPLVMImputer": GPLVMImputer(UnscentedGPLVM(n_components=2, n_inducing=30, max_iter=300,
                                                normalize_X="standardize", random_state=0)),
}
scale = X.std(axis=0)
completed = {}
for name, imputer in imputers.items():
    completed[name] = imputer.fit_transform(X_missing)
    error = ((completed[name] - X) / scale)[mask]
    print(f"{name:21s} RMSE {np.sqrt(np.mean(error ** 2)):.3f}")

# %%
# Predictive intervals
# --------------------
# ``transform(X) ± 1.645 · transform_std(X)`` is a 90 % predictive interval of each missing
# value; the observed entries have a standard deviation of 0. The fraction of hidden values
# inside their interval:
imputer = imputers["GPLVMImputer"]
std = imputer.transform_std(X_missing)
inside = np.abs(completed["GPLVMImputer"] - X)[mask] <= 1.645 * std[mask]
print(f"hidden values inside their 90 % interval: {inside.mean():.3f}")

# %%
# Imputed against hidden values
# -----------------------------
# One panel per imputer (all columns, standardised); the GPLVM's panel has the 90 % intervals.
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 4, figsize=(15, 4), sharex=True, sharey=True, layout="constrained")
true = (X / scale)[mask]
for ax, (name, values) in zip(axes, completed.items(), strict=True):
    guess = (values / scale)[mask]
    if name == "GPLVMImputer":
        ax.errorbar(true, guess, yerr=1.645 * (std / scale)[mask], fmt="none", ecolor="C1",
                    alpha=0.3, lw=0.8)
    ax.plot(true, guess, ".", ms=3)
    ax.axline((0, 0), slope=1, color="k", lw=0.8)
    ax.set_title(name)
    ax.set_xlabel("hidden value")
axes[0].set_ylabel("imputed value")
plt.show()
