"""Is the DVMGP gradient's disagreement with finite differences at a fitted state a bug? (no)

At a DVMGP fitted to noiseless data (the Table 4 two-cluster generator of de Souza 2020) the
noise variance ends near 1e-4 (normalised units) and central differences of the bound disagree
with the hand-derived gradient by up to a few per cent in some blocks. This script separates the
two candidate causes:

* the evaluation noise of the bound: the spread of ``f(x + t d)`` about a straight line for
  ``|t| <= 1e-8`` (21 points along a random unit direction ``d``);
* directional derivatives ``g . d`` along three random unit directions against central
  differences at eight steps and two Richardson extrapolations (``(4 D(h/2) - D(h)) / 3`` and
  its second level), at the fitted parameters with the fit's jitter, with jitter 1e-3, and with
  the noise variance set to 1e-2 (better-conditioned ``σ² K_u + Ψ2``).

A wrong gradient would leave a floor in the error that neither smaller truncation error
(Richardson) nor a better-conditioned bound removes; evaluation noise gives an error that grows
as the step shrinks and falls with the conditioning.

Subset: the first 300 of the 500 rows of ``make_two_parabolas()``, DVMGP L-BFGS-B 100 + 400
iterations, noise_variance_init 0.01, ``random_state=0``.

Usage::

    python benchmarks/dvmgp_fd_conditioning.py [--out examples/output/dvmgp_fd_conditioning.md]

One fit and ~250 bound evaluations (a few minutes on a shared 2-core VM).
"""

import argparse
import io
import sys
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_repo_on_path  # noqa: E402

ensure_repo_on_path()

from sklearn_lvgp import DVMGP  # noqa: E402
from sklearn_lvgp.bounds._dvmgp import dvmgp_objective  # noqa: E402
from sklearn_lvgp.datasets import make_two_parabolas  # noqa: E402
from sklearn_lvgp.variational._projection import output_kernel  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "examples" / "output" / "dvmgp_fd_conditioning.md"


def run():
    warnings.simplefilter("ignore")
    X, y = make_two_parabolas()
    X, y = X[:300], y[:300]
    m = DVMGP(optimizer="lbfgs", n_iter_fixed_noise=100, max_iter=400, noise_variance_init=0.01,
              random_state=0).fit(X, y)
    Xs = (X - m.X_mean_) / m.X_scale_
    Y = (y.reshape(-1, 1) - m.y_mean_) / m.y_scale_
    Q, m_u, m_v = m._sizes(X.shape[1])
    packer = m._packer(Q, X.shape[1], m_u, m_v)
    p0 = m._params
    Ku = output_kernel(p0["signal_std"], Q).K(p0["zeta"])
    cond = np.linalg.cond(Ku + m._jitter * np.trace(Ku) / len(Ku) * np.eye(len(Ku)))
    print(f"fitted noise variance {p0['noise']:.3e}, cond(K_u + jitter) {cond:.3g}")
    rng = np.random.default_rng(1)
    for noise in [None, 0.01]:
        p = dict(p0)
        if noise is not None:
            p["noise"] = noise
        x = packer.pack(p)
        for jit in [m._jitter, 1e-3]:
            def f(flat, jit=jit):
                return dvmgp_objective(Xs, Y, packer.unpack(flat), jit, m.qv_covariance)[0]

            v, gr, _ = dvmgp_objective(Xs, Y, packer.unpack(x), jit, m.qv_covariance)
            g = packer.pack_grad(gr, packer.unpack(x))
            d = rng.standard_normal(x.size)
            d /= np.linalg.norm(d)
            ts = np.arange(-10, 11) * 1e-9
            fs = np.array([f(x + t * d) for t in ts])
            res = fs - np.polyval(np.polyfit(ts, fs, 1), ts)
            print(f"noise={p['noise']:.2e} jitter={jit:g} value={v:.4f} "
                  f"eval-noise std={res.std():.2e} (rel {res.std() / abs(v):.1e})")
            for j in range(3):
                d = rng.standard_normal(x.size)
                d /= np.linalg.norm(d)
                exact = g @ d
                hs = [4e-2, 2e-2, 1e-2, 5e-3, 2.5e-3, 1e-3, 1e-4, 1e-5]
                cds = {h: (f(x + h * d) - f(x - h * d)) / (2 * h) for h in hs}
                r1 = {h: (4 * cds[h / 2] - cds[h]) / 3 for h in [4e-2, 2e-2, 1e-2, 5e-3]}
                r2 = {h: (16 * r1[h / 2] - r1[h]) / 15 for h in [4e-2, 2e-2, 1e-2]}

                def err(table, exact=exact):
                    return " ".join(f"{h:g}:{abs(val - exact) / abs(exact):.1e}"
                                    for h, val in table.items())

                print(f"  dir {j}: g.d={exact:+.6e}  cd rel err {err(cds)}  rich1 {err(r1)}"
                      f"  rich2 {err(r2)}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    buf = io.StringIO()
    with redirect_stdout(buf):
        run()
    text = buf.getvalue()
    print(text)
    args.out.write_text("```\n" + text + "```\n")


if __name__ == "__main__":
    main()
