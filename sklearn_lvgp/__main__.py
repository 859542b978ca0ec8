"""Demo: ``python -m sklearn_lvgp``.

Fits an :class:`~sklearn_lvgp.UnscentedGPLVM` with a 2-D latent space to scikit-learn's bundled
digits, prints a short report — the data, the model, the fit time, the 5-fold 1-nearest-neighbour
accuracy of the latent means next to PCA's — and saves a picture of both embeddings when
matplotlib is installed (``pip install ".[plot]"``).
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from . import UnscentedGPLVM
from ._compile.report import compile_timer
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
    X_pca = PCA(n_components=2).fit_transform(X)
    pca = knn_accuracy(X_pca, y)

    model = UnscentedGPLVM(n_components=2, expectation="unscented", n_inducing=30,
                           max_iter=args.max_iter, random_state=0)
    print("sklearn_lvgp demo: a 2-D latent space for handwritten digits")
    print(f"  data      scikit-learn's digits: {X.shape[0]} images of 8 x 8 pixels "
          f"({X.shape[1]} features), {len(np.unique(y))} classes")
    print("  model     UnscentedGPLVM(n_components=2, expectation='unscented', "
          "n_inducing=30)", flush=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, compile_timer() as compiled:
        warnings.simplefilter("always", ConvergenceWarning)
        Z = model.fit_transform(X)
    seconds = time.perf_counter() - t0
    print(f"  fit       {seconds:.1f} s, {model.n_iter_} L-BFGS iterations")
    if compiled.count:
        print(f"            ({compiled.seconds:.1f} s of it compiling numba kernels: first run "
              "only, cached afterwards)")
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        print(f"            stopped at the demo's budget of {args.max_iter} iterations "
              "(--max-iter raises it)")
    gplvm = knn_accuracy(Z, y)
    print("  1-NN accuracy of the 2-D embedding (5-fold cross-validation):")
    print(f"            PCA             {100 * pca.mean():5.1f} +/- "
          f"{100 * pca.std(ddof=1):.1f} %")
    print(f"            UnscentedGPLVM  {100 * gplvm.mean():5.1f} +/- "
          f"{100 * gplvm.std(ddof=1):.1f} %")

    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print('  picture   not saved: matplotlib is not installed '
                  '(pip install ".[plot]")')
        else:
            fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
            for ax, (emb, title, acc) in zip(axes, (
                    (X_pca, "PCA", pca),
                    (Z, "UnscentedGPLVM latent means", gplvm)), strict=True):
                sc = ax.scatter(emb[:, 0], emb[:, 1], c=y, cmap="tab10", s=5)
                ax.set(title=f"{title} (1-NN {100 * acc.mean():.1f} %)",
                       xlabel="dimension 1", ylabel="dimension 2")
            fig.colorbar(sc, ax=axes, label="digit")
            fig.savefig(args.plot, dpi=110)
            plt.close(fig)
            print(f"  picture   {os.path.abspath(args.plot)}")
    return pca.mean(), gplvm.mean()


if __name__ == "__main__":
    main()
