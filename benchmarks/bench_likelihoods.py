"""Likelihood benchmarks: what a non-Gaussian likelihood costs a deep GP's Adam step, and the
two-thread speed-up of the classifier's step.

``step_cost``: one Adam step (minibatch bound + gradient, and the update) of a 2-layer deep GP,
M = 100 inducing inputs per layer, batch = N = 1,000 rows, D = 8 inputs (inner width 8), one
sample, 1 thread, with the default Gaussian likelihood (analytic expectation; the baseline)
against likelihoods whose expectation is a Gauss–Hermite sum (20 nodes, jitted):
``DeepGP(likelihood=StudentT())``, ``DeepGP(likelihood=Beta())`` and ``DeepGPClassifier``
(``Bernoulli``, probit and logit), plus ``Poisson`` (closed-form expectation, exp link) and
the Gaussian likelihood object (closed form, through the likelihood-object path). Every
step is timed in the same interleaved repeats; the ratio to the Gaussian step is formed per repeat
(median, min, max). The target of the likelihoods work: at most 1.5× the Gaussian step.

``classifier_threads``: the same step of ``DeepGPClassifier`` (Bernoulli) at batch = N = 10,000,
with 1 and with 2 threads, interleaved; the speed-up is the per-repeat ratio of the 1-thread time
to the 2-thread time. Target: at least 1.8× on 2 cores.

Each step is the one ``fit`` takes (the model's ``elbo`` with per-layer workspaces reused between
steps, as ``fit`` passes them), on a model fitted for one step from its default start; the
update is a fixed-size signed step (Adam's update is O(parameters), negligible here).

Run standalone (``python benchmarks/bench_likelihoods.py [--quick] [--repeats R]``) or through
``run.py`` (``--only likelihood_step_cost --only likelihood_classifier_threads``). ``--quick``
(3 repeats, results in ``results/quick/``) is a smoke run, not a measurement.
"""

import argparse
import warnings

import numpy as np
from _common import (
    ensure_repo_on_path,
    fmt_ms,
    fmt_ratio,
    interleaved,
    interleaved_groups,
    markdown_table,
    ratio_summary,
    summary,
    timed,
    write_json,
)

ensure_repo_on_path()

from sklearn_lvgp import DeepGP, DeepGPClassifier  # noqa: E402
from sklearn_lvgp._core.parallel import threads  # noqa: E402
from sklearn_lvgp._core.workspace import Workspace  # noqa: E402
from sklearn_lvgp.likelihoods import Bernoulli, Beta, Gaussian, Poisson, StudentT  # noqa: E402

D = 8
M = 100
N_LAYERS = 2


def _problem(N, seed=0):
    """Inputs, a smooth regression target and its versions for each likelihood."""
    rs = np.random.RandomState(seed)
    X = rs.randn(N, D)
    f = np.sin(X @ rs.randn(D) / np.sqrt(D))
    y = f + 0.1 * rs.randn(N)
    targets = {"real": y, "unit": np.clip(0.5 + 0.4 * f, 0.02, 0.98),
               "count": rs.poisson(np.exp(f)).astype(float), "class": (y > 0).astype(int)}
    return X, targets


#: name: (estimator, likelihood factory, target kind)
CONFIGS = {
    "Gaussian (default, analytic)": (DeepGP, lambda: None, "real"),
    "Gaussian object": (DeepGP, Gaussian, "real"),
    "StudentT": (DeepGP, StudentT, "real"),
    "Beta": (DeepGP, Beta, "unit"),
    "Poisson": (DeepGP, Poisson, "count"),
    "Bernoulli probit (classifier)": (DeepGPClassifier, Bernoulli, "class"),
    "Bernoulli logit (classifier)": (DeepGPClassifier, lambda: Bernoulli(link="logit"), "class"),
}
BASELINE = "Gaussian (default, analytic)"


def _step(estimator, likelihood, X, y, N, rs):
    """One step's runner: the fitted model's bound + gradient at its parameters, and an update."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning after one step
        m = estimator(n_layers=N_LAYERS, n_inducing=M, max_iter=1, batch_size=N,
                      likelihood=likelihood, random_state=0).fit(X, y)
    model, x0 = m._model, m._x.copy()
    Xs = (X - m.X_mean_) / m.X_scale_
    if isinstance(m, DeepGPClassifier):
        Ys = np.searchsorted(m.classes_, y).reshape(-1, 1).astype(np.float64)
    else:
        Ys = ((y - m.y_mean_) / m.y_scale_)[:, None]
    ws = [Workspace() for _ in range(model.n_layers)]

    def step():
        _, g = model.elbo(x0, Xs, Ys, 1.0, 1, rs, workspaces=ws)
        return x0 - 0.01 * np.sign(g)

    return timed(step)


def run_step_cost(quick=False, repeats=None):
    """Seconds per step with each likelihood and the per-repeat ratio to the Gaussian step."""
    N = 1000
    repeats = repeats or (3 if quick else 21)
    X, targets = _problem(N)
    rs = np.random.RandomState(0)
    with threads(1):
        runners = {name: _step(est, lik(), X, targets[kind], N, rs)
                   for name, (est, lik, kind) in CONFIGS.items()}
        times = interleaved(runners, repeats, warmup=2)
    return {"N": N, "batch": N, "D": D, "M": M, "n_layers": N_LAYERS, "threads": 1,
            "repeats": repeats, "results": {
                name: {"seconds": summary(t), "ratio_to_gaussian": ratio_summary(
                    t, times[BASELINE]), "raw": t.tolist()} for name, t in times.items()}}


def report_step_cost(res):
    """Markdown table of :func:`run_step_cost`."""
    rows = [[name, fmt_ms(e["seconds"]), fmt_ratio(e["ratio_to_gaussian"])]
            for name, e in res["results"].items()]
    head = (f"### likelihood step_cost — DeepGP / DeepGPClassifier Adam step, "
            f"{res['n_layers']} layers, batch = N = {res['batch']}, D = {res['D']}, "
            f"M = {res['M']}, {res['threads']} thread, {res['repeats']} interleaved repeats "
            "(target: ≤ 1.5× the Gaussian step)\n\n")
    return head + markdown_table(["likelihood", "ms per step: median [min–max]",
                                  "÷ Gaussian (per repeat)"], rows)


def run_classifier_threads(quick=False, repeats=None):
    """The classifier's step at 1 and 2 threads, interleaved, and the per-repeat speed-up."""
    N = 10_000
    repeats = repeats or (3 if quick else 21)
    X, targets = _problem(N, seed=1)
    rs = np.random.RandomState(0)
    with threads(1):
        step = _step(DeepGPClassifier, Bernoulli(), X, targets["class"], N, rs)
    times = interleaved_groups([(lambda: threads(1), {"1 thread": step}),
                                (lambda: threads(2), {"2 threads": step})],
                               repeats, warmup=2)
    return {"N": N, "batch": N, "D": D, "M": M, "n_layers": N_LAYERS, "repeats": repeats,
            "results": {name: {"seconds": summary(t), "raw": t.tolist()}
                        for name, t in times.items()},
            "speedup": ratio_summary(times["1 thread"], times["2 threads"])}


def report_classifier_threads(res):
    """Markdown table of :func:`run_classifier_threads`."""
    rows = [[name, fmt_ms(e["seconds"])] for name, e in res["results"].items()]
    head = (f"### likelihood classifier_threads — DeepGPClassifier (Bernoulli) Adam step, "
            f"{res['n_layers']} layers, batch = N = {res['batch']}, D = {res['D']}, "
            f"M = {res['M']}, {res['repeats']} interleaved repeats; speed-up 1 ÷ 2 threads "
            f"(per repeat): {fmt_ratio(res['speedup'])} (target: ≥ 1.8×)\n\n")
    return head + markdown_table(["threads", "ms per step: median [min–max]"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    for name, (run, report) in {
            "likelihood_step_cost": (run_step_cost, report_step_cost),
            "likelihood_classifier_threads": (run_classifier_threads,
                                              report_classifier_threads)}.items():
        res = run(quick=args.quick, repeats=args.repeats)
        write_json(name, res, quick=args.quick)
        print(report(res), "\n")


if __name__ == "__main__":
    main()
