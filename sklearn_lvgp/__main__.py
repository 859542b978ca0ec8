"""Demo: ``python -m sklearn_lvgp``.

Fits an :class:`~sklearn_lvgp.UnscentedGPLVM` with a 2-D latent space to scikit-learn's bundled
digits, prints the 5-fold 1-nearest-neighbour accuracy of the latent means next to PCA's, and saves
a latent-space plot when matplotlib is installed.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from . import UnscentedGPLVM
from .utils.evaluation import knn_accuracy


def main(argv=None):
    """Run the demo; returns the two accuracies."""
    parser = argparse.ArgumentParser(prog="python -m sklearn_lvgp",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--max-iter", type=int, default=600)
    parser.add_argument("--plot", default="gplvm_digits.png",
                        help="where to save the latent-space plot ('' to skip)")
    args = parser.parse_args(argv)

    X, y = load_digits(return_X_y=True)
    print(f"digits: {X.shape[0]} images x {X.shape[1]} pixels, {len(np.unique(y))} classes")
    pca = knn_accuracy(PCA(n_components=2).fit_transform(X), y)

    model = UnscentedGPLVM(n_components=2, expectation="unscented", n_inducing=30,
                           max_iter=args.max_iter, random_state=0)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        Z = model.fit_transform(X)
    seconds = time.perf_counter() - t0
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        print(f"(stopped at the demo's budget of {args.max_iter} iterations; "
              "raise --max-iter for a tighter fit)")
    gplvm = knn_accuracy(Z, y)
    print(f"UnscentedGPLVM fit: {seconds:.1f} s, {model.n_iter_} L-BFGS iterations, "
          f"ELBO {model.elbo_:.1f}, expectation={model.expectation_!r}")
    print("1-NN accuracy of the 2-D embedding (5-fold CV):")
    print(f"  PCA             {100 * pca.mean():5.1f} +/- {100 * pca.std(ddof=1):.1f} %")
    print(f"  UnscentedGPLVM  {100 * gplvm.mean():5.1f} +/- {100 * gplvm.std(ddof=1):.1f} %")

    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not installed: no plot saved")
        else:
            fig, ax = plt.subplots(figsize=(6, 5))
            sc = ax.scatter(Z[:, 0], Z[:, 1], c=y, cmap="tab10", s=6)
            fig.colorbar(sc, ax=ax, label="digit")
            ax.set(title="UnscentedGPLVM latent means (digits)", xlabel="latent 1",
                   ylabel="latent 2")
            fig.tight_layout()
            fig.savefig(args.plot, dpi=120)
            print(f"latent-space plot saved to {args.plot}")
    return pca.mean(), gplvm.mean()


if __name__ == "__main__":
    main()
