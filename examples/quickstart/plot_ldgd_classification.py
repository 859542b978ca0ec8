"""
LDGD: a classifier with a 2-D latent space
==========================================

The latent discriminative generative decoder (LDGD, Ziaei et al. 2024) gives every training row
a latent point that two sparse variational GPs read at once: one reconstructs the row, the other
predicts its label. The latent space is therefore shaped both by the data and by the classes,
and new rows are classified by first inferring their latent point. This example fits
:class:`~sklearn_lvgp.LDGD` to two interleaved half-moons hidden in 20 columns, reports its
accuracy next to two scikit-learn baselines, and draws the 2-D latent space with
``transform``.
"""

# %%
# Data
# ----
# The two moons are mixed into 10 columns by a random linear map, and 10 columns of pure noise are
# appended, as in the LDGD paper's synthetic experiment. Half of the rows are held out.
import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split

rng = np.random.RandomState(0)
moons, y = make_moons(n_samples=400, noise=0.1, random_state=0)
X = np.hstack([moons @ rng.randn(2, 10), rng.randn(400, 10)])
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y,
                                                    random_state=0)
print(f"{X_train.shape[0]} training rows, {X_test.shape[0]} test rows, {X.shape[1]} columns")

# %%
# Fit LDGD
# --------
# ``n_components`` is the latent dimension and ``n_inducing`` the number of inducing points of
# each GP path. The bound is maximised by Adam on minibatches with one sampled latent point per
# row and step, as in the paper.
from sklearn_lvgp import LDGD

ldgd = LDGD(n_components=2, n_inducing=10, max_iter=2000, random_state=0).fit(X_train, y_train)

# %%
# Accuracy
# --------
# ``score`` is the accuracy, as for every scikit-learn classifier. A linear model cannot separate
# the moons; nearest neighbours suffer from the noise columns.
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

print(f"LDGD test accuracy: {ldgd.score(X_test, y_test):.3f} "
      f"(training {ldgd.score(X_train, y_train):.3f})")
for baseline in [LogisticRegression(), KNeighborsClassifier()]:
    acc = baseline.fit(X_train, y_train).score(X_test, y_test)
    print(f"{type(baseline).__name__} test accuracy: {acc:.3f}")

# %%
# The latent space
# ----------------
# ``transform`` returns the fitted latent means for the training rows and infers the latent
# points of new rows with the model held fixed. ``relevance_`` holds the inverse ARD length
# scales of the regression (row 0) and classification (row 1) paths over the two latent
# dimensions.
import matplotlib.pyplot as plt

Z_train = ldgd.transform(X_train)
Z_test = ldgd.transform(X_test)
print("relevance (rows: regression, classification path):\n", np.round(ldgd.relevance_, 3))

fig, ax = plt.subplots(figsize=(6, 5), layout="constrained")
for k, colour in zip(ldgd.classes_, ["C0", "C1"], strict=True):
    ax.scatter(*Z_train[y_train == k].T, s=15, color=colour, label=f"class {k}, training")
    ax.scatter(*Z_test[y_test == k].T, s=30, facecolors="none", edgecolors=colour,
               label=f"class {k}, test")
wrong = ldgd.predict(X_test) != y_test
ax.scatter(*Z_test[wrong].T, s=80, marker="x", color="k", label="misclassified test rows")
ax.set_xlabel("latent 1")
ax.set_ylabel("latent 2")
ax.set_title("LDGD latent means")
ax.legend(fontsize=8)
plt.show()
