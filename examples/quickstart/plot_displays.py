"""
Plots of fitted models: latent space, predictive density, training curve
=========================================================================

:mod:`sklearn_lvgp.inspection` draws a fitted model the scikit-learn way: a ``Display`` built
with ``from_estimator`` (as :class:`sklearn.inspection.DecisionBoundaryDisplay`), which keeps
the computed values and the matplotlib artists (``ax_``, ``figure_``, ``scatter_``, ...) and can
be drawn again on other axes with ``plot(ax=...)``. matplotlib is an optional dependency
(``pip install 'sklearn_lvgp[plot]'``).
"""

# %%
# Latent space of a GPLVM
# -----------------------
# :class:`~sklearn_lvgp.inspection.LatentSpaceDisplay` shows the latent means of an
# :class:`~sklearn_lvgp.UnscentedGPLVM` (or :class:`~sklearn_lvgp.LDGD`) in the two most
# relevant latent dimensions (largest ``relevance_``), coloured by a label array, over the
# model's predictive variance: the variance is low where the model has data.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from sklearn_lvgp import GPCDE, UnscentedGPLVM
from sklearn_lvgp.inspection import (
    LatentSpaceDisplay,
    PredictiveDensityDisplay,
    TrainingCurveDisplay,
)

X, y = load_iris(return_X_y=True)
with warnings.catch_warnings():  # a short fixed budget: silence the warning that it ended
    warnings.simplefilter("ignore", ConvergenceWarning)
    gplvm = UnscentedGPLVM(n_components=3, n_inducing=20, max_iter=200, random_state=0).fit(X)
print("relevance_:", np.round(gplvm.relevance_, 3))
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
latent = LatentSpaceDisplay.from_estimator(gplvm, y=load_iris().target_names[y], ax=axes[0])
TrainingCurveDisplay.from_estimator(gplvm, ax=axes[1])
print("dimensions shown:", latent.dims)

# %%
# Predictive density of a regressor
# ---------------------------------
# :class:`~sklearn_lvgp.inspection.PredictiveDensityDisplay` evaluates the model's
# ``predict_log_density`` on a grid of ``(x, y)`` and draws ``p(y | x)`` under the training
# points. A :class:`~sklearn_lvgp.GPCDE` fitted on a target with two branches shows both.
rng = np.random.RandomState(0)
X1 = rng.uniform(-2, 2, (300, 1))
y1 = rng.choice([-1.0, 1.0], 300) * (np.sin(2 * X1[:, 0]) + 1) + 0.1 * rng.randn(300)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    cde = GPCDE(latent_dim=1, n_inducing=20, gh_order=10, optimizer="lbfgs", max_iter=300,
                random_state=0).fit(X1, y1)
density = PredictiveDensityDisplay.from_estimator(cde, X1, y1, n_x=80, n_y=100, cmap="viridis",
                                                  scatter_kwargs={"c": "w", "s": 2})

# %%
# Drawing again
# -------------
# A display keeps what it computed: ``plot`` draws it on new axes without touching the model.
fig, ax = plt.subplots(figsize=(5, 3.5))
density.plot(ax=ax, cmap="magma")
plt.show()
