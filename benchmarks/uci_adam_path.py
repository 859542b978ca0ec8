"""Score a Fig. 2.4 protocol fit at states along its Adam path (a diagnostic, not a timing).

``examples/plot_deep_gp_uci.py`` scores the state after the last of 5000 Adam steps. This
script repeats one of its fits with the same settings (``make_model`` there), keeps copies of
the parameters at chosen steps without changing the path, and scores each copy on the test
split afterwards: test log-likelihood, RMSE, and the one-sample ELBO estimate the next step
saw. It also writes the whole ELBO-estimate history.

Usage::

    python benchmarks/uci_adam_path.py naval 0 3 \
        [--every 250] [--last 100] [--last-every 5] [--natgrad GAMMA] [--early-stopping] \
        [--schedule constant|staircase|cosine] [--out PATH.json]

Arguments: data set, published split, number of layers. Snapshots are taken every ``--every``
steps and every ``--last-every`` steps in the last ``--last`` steps. One fit of naval DGP 3
takes about 45 minutes on one thread.

``--natgrad`` departs from the protocol (Adam only): natural-gradient steps on the last layer's
q(u), either a fixed γ (``0.1``) or the log-linear warm-up ``g0:g1:K`` of Salimbeni 2020, §3.4.2
(for example ``1e-4:0.1:40``, the schedule of its §3.4.4 for naval). The natural-gradient step of
iteration k runs before its Adam step, so the state recorded "after k - 1 steps" already holds
the k-th natural-gradient update of the last layer.

``--early-stopping`` also departs from it: ``DeepGP(early_stopping=True)`` with its defaults
(10 % of the training rows held out, a check every 100 steps, patience 5), the remedy the
``DeepGP`` notes name for Adam's excursions. The state the fit returns (the best checked one)
is scored as ``"returned"``, next to the states along the path; the held-out scores are saved.

``--schedule`` sets ``learning_rate_schedule`` (the protocol's is ``constant``). ``cosine``
anneals Adam's rate from 0.01 to 0.0001 over the 5000 steps, so the last steps are small: the
remedy for a last iterate caught in an excursion that keeps to one fit of the full 5000 steps.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_repo_on_path  # noqa: E402

ensure_repo_on_path()

import sklearn_lvgp.base as deep_gp_module  # noqa: E402 - the estimators run Adam through the base class
from sklearn_lvgp import DeepGP  # noqa: E402
from sklearn_lvgp.datasets import uci_hl_splits  # noqa: E402

N_ITER = 5000


def snapshot_steps(every, last, last_every):
    """Steps after which the parameters are copied (the final state is always kept)."""
    steps = set(range(every, N_ITER + 1, every)) if every else set()
    steps |= set(range(N_ITER - last, N_ITER + 1, last_every)) if last else set()
    return {s for s in steps if 0 < s < N_ITER}


def parse_gamma(text):
    """``natgrad_gamma`` from ``--natgrad``: None, a float, or ``g0:g1:K`` as a tuple.

    Only the format is checked here; ``DeepGP`` validates the values.
    """
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) == 1:
        return float(parts[0])
    if len(parts) != 3:
        raise ValueError(f"--natgrad must be a float or g0:g1:K, got {text!r}.")
    return float(parts[0]), float(parts[1]), int(parts[2])


def recording_run_adam(run_adam, steps, snaps, elbo, outcome):
    """``run_adam`` that copies the parameters after each step in ``steps``; same path.

    Without a held-out check the returned state is the last iterate, kept as step
    ``n_iter``. With one (early stopping) it is the best checked state: it is kept in
    ``outcome`` with the step it was checked at (found by comparing it with a copy taken at
    every check), the held-out scores and whether early stopping fired.
    """
    def run(objective, x0, **kwargs):
        calls = [0]
        checked = []

        def observed(x, idx):
            calls[0] += 1
            value, grad = objective(x, idx)
            if calls[0] - 1 in steps:  # x is the state after calls - 1 updates
                snaps[calls[0] - 1] = x.copy()
            elbo.append(-float(value))
            return value, grad

        validation = kwargs.get("validation")
        if validation is not None:
            def check(x):  # called after the update of step calls
                checked.append((calls[0], x.copy()))
                return validation(x)
            kwargs["validation"] = check

        result = run_adam(observed, x0, **kwargs)
        if validation is None:
            snaps[calls[0]] = result.x.copy()
        else:
            # run_adam returns a checked state (it checks the last iterate too when the last
            # step was not a check), so exactly one copy matches
            step, = (step for step, x in checked if np.array_equal(x, result.x))
            outcome.update(x=result.x.copy(), n_iter=int(result.n_iter), step=step,
                           stopped_early=bool(result.stopped_early),
                           validation_history=[float(v) for v in result.validation_history])
        return result
    return run


def score(model, x, X_test, y_test):
    """Test LL and RMSE of ``model`` at parameters ``x`` (the protocol's 100 stored paths)."""
    model._x = x
    ll = float(model.predict_log_density(X_test, y_test).mean())
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
    return ll, rmse


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("split", type=int)
    parser.add_argument("layers", type=int)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--last", type=int, default=100)
    parser.add_argument("--last-every", type=int, default=5)
    parser.add_argument("--natgrad", default=None)
    parser.add_argument("--early-stopping", action="store_true")
    parser.add_argument("--schedule", default="constant",
                        choices=("constant", "staircase", "cosine"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    gamma = parse_gamma(args.natgrad)
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"  # pre-filled (CI)
    data = {"data_home": shared, "download_if_missing": False} if shared.is_dir() else {}
    try:
        (_, X, y, X_test, y_test), = list(uci_hl_splits(args.dataset, args.split, 1, **data))
    except OSError as exc:
        print(f"skipped: {exc}")  # noqa: T201
        return 0
    # the protocol's settings: examples/plot_deep_gp_uci.py, make_model
    model = DeepGP(tol=None, n_layers=args.layers, n_inducing=100, learning_rate=0.01,
                   batch_size=10000, max_iter=N_ITER, n_samples=1, n_predict_samples=100,
                   learning_rate_schedule=args.schedule, natgrad_gamma=gamma,
                   early_stopping=args.early_stopping, inner_layer_init="collapsed",
                   random_state=0)
    snaps, elbo, outcome = {}, [], {}
    original = deep_gp_module.run_adam
    deep_gp_module.run_adam = recording_run_adam(
        original, snapshot_steps(args.every, args.last, args.last_every), snaps, elbo, outcome)
    try:
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    finally:
        deep_gp_module.run_adam = original
    print(f"{args.dataset} split {args.split} DGP {args.layers}, natgrad γ {gamma}, "  # noqa: T201
          f"early stopping {args.early_stopping}, schedule {args.schedule}: "
          f"fit {seconds:.0f} s, {model.n_iter_} steps")
    returned = None
    if args.early_stopping:
        step = outcome["step"]
        ll, rmse = score(model, outcome["x"], X_test, y_test)
        returned = {"step": step, "test_ll": ll, "rmse": rmse,
                    "stopped_early": outcome["stopped_early"],
                    "validation_history": outcome["validation_history"]}
        print(f"returned: state after {step} steps (stopped early: "  # noqa: T201
              f"{outcome['stopped_early']}): test LL {ll: .4f}  RMSE {rmse:.6f}")
        print("held-out scores every 100 steps: "  # noqa: T201
              + " ".join(f"{v:.3f}" for v in outcome["validation_history"]))
    rows = []
    for step in sorted(snaps):
        ll, rmse = score(model, snaps[step], X_test, y_test)
        seen = elbo[step] if step < len(elbo) else None
        rows.append({"step": step, "test_ll": ll, "rmse": rmse, "next_elbo_estimate": seen})
        print(f"after {step:5d} steps: test LL {ll: .4f}  RMSE {rmse:.6f}  "  # noqa: T201
              + ("" if seen is None else f"next-step ELBO estimate {seen: .4e}"))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"dataset": args.dataset, "split": args.split, "layers": args.layers,
                       "natgrad_gamma": gamma, "early_stopping": args.early_stopping,
                       "schedule": args.schedule,
                       "fit_seconds": seconds, "n_iter": int(model.n_iter_),
                       "returned": returned, "snapshots": rows, "elbo_estimates": elbo}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
