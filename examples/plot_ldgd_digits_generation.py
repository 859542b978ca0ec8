"""
Digits: generating images for a label with LDGD (analogue of Ziaei et al. 2024, Fig. 5)
=======================================================================================

The paper decodes latent points near each class cluster of an MNIST model into images (Fig. 5). This
analogue uses scikit-learn's 8 × 8 digits (pixels / 16, no further scaling, as the reference divides
MNIST pixels by 255): an LDGD with Q = 5 latent dimensions and M = 30 inducing points per path is
trained with the paper's stochastic method, then ``LDGD.sample(digit, n)`` draws latent points from
the Gaussian fitted to the training latents of that digit and decodes them with the regression
path's predictive mean. The figure shows, per digit, the class-mean image and generated images; the
script also reports the held-out accuracy and whether each decoded class-mean latent is nearest
(Euclidean, pixel space) to its own class mean (the generation check of our reproduction protocol).

Knobs: ``LVGP_QUICK=1`` (fewer rows and steps).
"""

# %%
# Set-up
# ------
import json
import os
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from sklearn_lvgp import LDGD  # noqa: E402

warnings.filterwarnings("ignore", category=ConvergenceWarning)
QUICK = os.environ.get("LVGP_QUICK") == "1"
OUT = Path(__file__).resolve().parent / "output" if "__file__" in globals() else Path("output")
OUT.mkdir(exist_ok=True)

X, y = load_digits(return_X_y=True)
X = X / 16.0
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=42, stratify=y)
if QUICK:
    Xtr, ytr = Xtr[:500], ytr[:500]

# %%
# Fit (paper's stochastic method)
# -------------------------------
model = LDGD(tol=None, n_components=5, n_inducing=30, expectation="monte_carlo",
             elbo_weighting="ref-2024-03", normalize_X="none", batch_size=100,
             max_iter=1500 if QUICK else 6000, transform_max_iter=500 if QUICK else 2000,
             random_state=0).fit(Xtr, ytr)
accuracy = float(model.score(Xte, yte))
print(f"held-out accuracy {accuracy:.3f}")

# %%
# Generated images per digit
# --------------------------
n_gen = 6
fig, axes = plt.subplots(10, n_gen + 1, figsize=(1.2 * (n_gen + 1), 12))
class_means = np.array([Xtr[ytr == k].mean(0) for k in model.classes_])
decoded_means = model.inverse_transform(
    np.array([model.latent_mean_[ytr == k].mean(0) for k in model.classes_]))
nearest_ok = [int(np.argmin(np.linalg.norm(class_means - d, axis=1))) == i
              for i, d in enumerate(decoded_means)]
for i, k in enumerate(model.classes_):
    images, _ = model.sample(k, n_samples=n_gen, random_state=i)
    axes[i, 0].imshow(class_means[i].reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
    for j in range(n_gen):
        axes[i, j + 1].imshow(np.clip(images[j], 0, 1).reshape(8, 8), cmap="gray_r", vmin=0,
                              vmax=1)
    axes[i, 0].set_ylabel(str(k))
for ax in axes.ravel():
    ax.set_xticks([])
    ax.set_yticks([])
axes[0, 0].set_title("mean")
axes[0, 1].set_title("generated →", loc="left")
fig.suptitle(f"LDGD digits (Q = 5): held-out accuracy {accuracy:.3f}")
fig.tight_layout()
fig.savefig(OUT / "ldgd_digits_generation.png", dpi=90)
summary = {"accuracy": accuracy, "decoded_mean_nearest_own_class": nearest_ok,
           "n_train": int(Xtr.shape[0]), "n_iter": model.n_iter_}
print(summary)
(OUT / ("ldgd_digits_quick.json" if QUICK else "ldgd_digits.json")).write_text(
    json.dumps(summary, indent=1))
