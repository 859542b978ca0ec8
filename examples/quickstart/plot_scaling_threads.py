"""
Threads: the same fit, faster
=============================

Every estimator takes ``n_jobs`` (``None``: one thread, ``-1``: all cores). The bounds are
evaluated in fixed blocks of rows whose partial sums are added in a fixed order, so the number
of threads changes the time of a fit, never its result. This example fits
:class:`~sklearn_lvgp.SparseGPRegressor` on 10,000 rows with one thread and with every core of
the machine that runs it, and compares the times and the predictions.
"""

# %%
# Two fits of the same model
# --------------------------
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

from sklearn_lvgp import SparseGPRegressor

rng = np.random.RandomState(0)
X = rng.uniform(-3, 3, (10_000, 4))
y = np.sin(X).sum(axis=1) + 0.1 * rng.randn(10_000)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # fixed budgets end with a ConvergenceWarning
    SparseGPRegressor(n_inducing=10, max_iter=2).fit(X[:200], y[:200])  # compile before timing
seconds, predictions = {}, {}
for n_jobs in (None, -1):
    model = SparseGPRegressor(n_inducing=100, max_iter=30, n_jobs=n_jobs, random_state=0)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds[n_jobs] = time.perf_counter() - start
    predictions[n_jobs] = model.predict(X[:2000])
same = np.array_equal(predictions[None], predictions[-1])
print(f"one thread {seconds[None]:.2f} s, {os.cpu_count()} cores {seconds[-1]:.2f} s; "
      f"identical predictions: {same}")

# %%
# Time and result
# ---------------
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(["n_jobs=None\n(one thread)", f"n_jobs=-1\n({os.cpu_count()} cores)"],
       [seconds[None], seconds[-1]], color=["tab:gray", "tab:blue"])
ax.set_ylabel("fit time (s)")
ax.set_title(f"SparseGPRegressor, 10,000 rows: identical predictions = {same}")
fig.tight_layout()
plt.show()
