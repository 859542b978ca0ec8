"""
Bayesian GPLVM on the digits: a 2-D map of 64-pixel images
==========================================================

:class:`~sklearn_lvgp.UnscentedGPLVM` finds a low-dimensional latent point for every row of a data
set such that a Gaussian process maps the latent points back to the data (the Bayesian GPLVM of
Titsias & Lawrence 2010). Unlike PCA the map is non-linear, and every latent point comes with a
posterior variance. This example embeds the 8x8 handwritten digits in two dimensions, compares the
map with PCA by the accuracy of a 1-nearest-neighbour classifier on the latent coordinates, maps
new images with ``transform`` and reads the relevance of each latent dimension. It finally swaps
the RBF kernel for a Matérn-3/2 one, whose kernel expectations have no closed form and are
computed with the unscented transform (de Souza et al. 2021).
"""

# %%
# Data
# ----
# The 1797 digit images are split into a training set and a few new images that the models do
# not see during fitting.
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

X, y = load_digits(return_X_y=True)
X_train, X_new, y_train, y_new = train_test_split(X, y, test_size=0.1, stratify=y,
                                                  random_state=0)
print(f"{X_train.shape[0]} training images, {X_new.shape[0]} new images, "
      f"{X.shape[1]} pixels each")

# %%
# PCA and the Bayesian GPLVM
# --------------------------
# Both models reduce the 64 pixels to two coordinates. The GPLVM starts from the PCA scores and
# moves them to maximise its variational bound; ``n_inducing`` inducing points keep the cost
# linear in the number of rows. With the default RBF kernel the kernel expectations are exact
# (``expectation_ == "analytic"``).
from sklearn.decomposition import PCA

from sklearn_lvgp import UnscentedGPLVM

pca = PCA(n_components=2).fit(X_train)
Z_pca = pca.transform(X_train)

gplvm = UnscentedGPLVM(n_components=2, n_inducing=30, tol=1e-6, random_state=0)
Z_gplvm = gplvm.fit_transform(X_train)
print(f"GPLVM: {gplvm.n_iter_} L-BFGS iterations, expectation {gplvm.expectation_!r}, "
      f"bound {gplvm.elbo_:.1f}")

# %%
# How well do the maps separate the digits?
# -----------------------------------------
# A 1-nearest-neighbour classifier on the 2-D coordinates, scored by 5-fold cross-validation,
# measures how well each map keeps images of the same digit together.
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

knn = KNeighborsClassifier(n_neighbors=1)
acc_pca = cross_val_score(knn, Z_pca, y_train, cv=5).mean()
acc_gplvm = cross_val_score(knn, Z_gplvm, y_train, cv=5).mean()
print(f"1-NN accuracy on the latent coordinates: PCA {acc_pca:.3f}, GPLVM {acc_gplvm:.3f}")

# %%
# Mapping new images
# ------------------
# ``transform`` returns the fitted latent means for training rows; for new rows it infers their
# latent posterior with the model held fixed. ``return_std=True`` also gives its standard
# deviation. A 1-NN classifier fitted on the training map then labels the new images.
Z_new, Z_new_std = gplvm.transform(X_new, return_std=True)
acc_new = knn.fit(Z_gplvm, y_train).score(Z_new, y_new)
print(f"1-NN accuracy of the {len(X_new)} new images in the GPLVM map: {acc_new:.3f}")
print(f"mean latent standard deviation of the new images: {Z_new_std.mean():.3f}")

# %%
# Relevance of the latent dimensions
# ----------------------------------
# The ARD kernel has one length scale per latent dimension; ``relevance_`` holds their inverses.
# A dimension the model does not need would get a relevance close to zero.
print("relevance of the two latent dimensions:", np.round(gplvm.relevance_, 3))

# %%
# Any kernel: the unscented transform
# -----------------------------------
# With a Matérn-3/2 kernel the expectations of the kernel under the latent posteriors have no
# closed form; the model computes them at the 2Q sigma points of each posterior instead.
from sklearn_lvgp.kernels import Matern32

gplvm_m32 = UnscentedGPLVM(n_components=2, kernel=Matern32(length_scale=[1.0, 1.0]),
                           n_inducing=30, tol=1e-6, random_state=0)
Z_m32 = gplvm_m32.fit_transform(X_train)
acc_m32 = cross_val_score(knn, Z_m32, y_train, cv=5).mean()
print(f"Matérn-3/2 GPLVM: expectation {gplvm_m32.expectation_!r}, 1-NN accuracy {acc_m32:.3f}")

# %%
# The three maps
# --------------
# Each point is a training image coloured by its digit; the stars in the middle panel are the
# new images placed by ``transform``.
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), layout="constrained")
panels = [(Z_pca, f"PCA\n1-NN accuracy {acc_pca:.2f}"),
          (Z_gplvm, f"GPLVM, RBF kernel\n1-NN accuracy {acc_gplvm:.2f}"),
          (Z_m32, f"GPLVM, Matérn-3/2 kernel\n1-NN accuracy {acc_m32:.2f}")]
for ax, (Z, title) in zip(axes, panels, strict=True):
    points = ax.scatter(Z[:, 0], Z[:, 1], c=y_train, cmap="tab10", s=6, vmin=-0.5, vmax=9.5)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("latent 1")
axes[0].set_ylabel("latent 2")
axes[1].scatter(Z_new[:, 0], Z_new[:, 1], c=y_new, cmap="tab10", s=70, marker="*",
                vmin=-0.5, vmax=9.5, edgecolors="k", linewidths=0.5, label="new images")
axes[1].legend(loc="lower right", fontsize=8)
fig.colorbar(points, ax=axes, ticks=range(10), label="digit")
plt.show()
