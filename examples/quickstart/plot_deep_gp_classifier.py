"""
Deep GP classification on two interleaved moons
===============================================

:class:`~sklearn_lvgp.DeepGPClassifier` is the deep GP of :class:`~sklearn_lvgp.DeepGP` with a
classification likelihood on its last layer: a Bernoulli (probit) likelihood for two classes.
``n_layers=1`` is the sparse variational GP classifier. This example fits one and two layers to
scikit-learn's two moons, reports their held-out accuracy and log loss next to scikit-learn's
:class:`~sklearn.gaussian_process.GaussianProcessClassifier`, and draws the predicted probability
of the second class.
"""

# %%
# Data
# ----
# 300 points of the two moons with noise 0.2; half are held out.
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split

X, y = make_moons(n_samples=300, noise=0.2, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                    random_state=0)

# %%
# Fit the models
# --------------
# Both deep GP classifiers are trained with Adam on a Monte Carlo estimate of the bound, on the
# full batch (``batch_size=None``). ``tol=None`` runs all ``max_iter`` steps. scikit-learn's
# classifier (Laplace approximation) gets a kernel with a free amplitude and length scale.
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF

from sklearn_lvgp import DeepGPClassifier

models = {
    "GaussianProcessClassifier": GaussianProcessClassifier(1.0 * RBF(1.0), random_state=0),
    "DeepGPClassifier, 1 layer": DeepGPClassifier(n_layers=1, n_inducing=20, batch_size=None,
                                                  max_iter=500, tol=None, random_state=0),
    "DeepGPClassifier, 2 layers": DeepGPClassifier(n_layers=2, n_inducing=20, batch_size=None,
                                                   max_iter=500, tol=None, random_state=0),
}
for model in models.values():
    model.fit(X_train, y_train)

# %%
# Held-out scores
# ---------------
# ``score`` is the accuracy, as for every scikit-learn classifier; the log loss judges the
# predicted probabilities (lower is better).
from sklearn.metrics import log_loss

for name, model in models.items():
    print(f"{name:27s} accuracy {model.score(X_test, y_test):.3f}, "
          f"log loss {log_loss(y_test, model.predict_proba(X_test)):.3f}")

# %%
# Predicted probabilities
# -----------------------
# scikit-learn's :class:`~sklearn.inspection.DecisionBoundaryDisplay` draws any classifier's
# ``predict_proba``; the test points are on top.
import matplotlib.pyplot as plt
from sklearn.inspection import DecisionBoundaryDisplay

fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=True, layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    display = DecisionBoundaryDisplay.from_estimator(
        model, X, response_method="predict_proba", grid_resolution=50, ax=ax, cmap="RdBu",
        vmin=0, vmax=1, alpha=0.8)
    ax.scatter(X_test[:, 0], X_test[:, 1], c=y_test, cmap="RdBu", edgecolor="w", linewidth=0.8,
               s=20)
    ax.set_title(name)
fig.colorbar(display.surface_, ax=axes, label="probability of class 1")
plt.show()
