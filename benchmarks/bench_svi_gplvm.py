"""Benchmark ``svi_gplvm``: the minibatch (SVI) GPLVM against the collapsed fit, and its scaling.

Two parts, each on data drawn from a 5-D latent space through a fixed random two-layer map to
D = 12 columns plus Gaussian noise (``_data``), with M = 100 inducing inputs and Q = 5:

``elbo``
    One collapsed fit (``UnscentedGPLVM``'s default optimiser at this size, L-BFGS-B, its
    default budget; its bound at every iteration is traced through the fit's callback) and SVI
    fits of 1, 2, 4, ... epochs or ``--epoch-list`` (each a fresh fit with the same seed),
    all at ``--n-rows`` rows (default 5·10⁴) and ``--threads`` threads. The table gives each
    fit's wall time, its final ELBO per row (``elbo_ / N``: the collapsed bound for the
    collapsed fit, the uncollapsed bound over all rows for SVI), the SVI/collapsed time ratio
    and the relative ELBO gap. Target (issue 56): an SVI fit within 1 % of the collapsed
    ELBO per row in ≤ 1/5 of its wall time.
``scale``
    SVI fits of ``--epochs`` epochs (default 5) at each of ``--scale-rows`` (default
    10⁵, 2.5·10⁵, 5·10⁵, 10⁶), each in its own subprocess so that its peak RSS
    (``ru_maxrss``) is its own: wall time of the fit, time per epoch, time per epoch per
    10⁶ rows (linear in N when it stays flat) and peak RSS. Target: 10⁶ rows, 5 epochs in
    ≤ 10 minutes on 2 threads with peak RSS ≤ 2 GB.

Usage (quiet machine)::

    python benchmarks/bench_svi_gplvm.py --parts elbo,scale --threads 2 --label local_2core

Smoke run (seconds; written under ``results/quick/``)::

    python benchmarks/bench_svi_gplvm.py --parts elbo,scale --n-rows 2000 --max-epochs 2 \\
        --scale-rows 2000,4000 --epochs 1 --n-inducing 20 --quick
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ensure_repo_on_path, machine_info, markdown_table, write_json  # noqa: E402

D, Q = 12, 5


def _data(n_rows, seed=0):
    """``n_rows`` rows of 12 columns from a 5-D latent space (a fixed random tanh network)."""
    r = np.random.default_rng(seed)
    W1, W2 = r.standard_normal((Q, 20)), r.standard_normal((20, D)) / np.sqrt(20)
    X = np.empty((n_rows, D))
    for a in range(0, n_rows, 100_000):  # blocks: no (N, 20) temporary at 10⁶ rows
        b = min(n_rows, a + 100_000)
        latent = r.standard_normal((b - a, Q))
        X[a:b] = np.tanh(latent @ W1) @ W2 + 0.1 * r.standard_normal((b - a, D))
    return X


def _model(args, **kw):
    from sklearn_lvgp import UnscentedGPLVM

    return UnscentedGPLVM(n_components=Q, n_inducing=args.n_inducing, random_state=0,
                          n_jobs=args.threads, **kw)


def _svi(args, epochs):
    return _model(args, optimizer="svi", max_iter=epochs, batch_size=args.batch_size,
                  learning_rate=args.learning_rate, natgrad_gamma=args.natgrad_gamma,
                  encoder=args.encoder)


def _fit(model, X):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    return time.perf_counter() - t0


def _traced(model, n_rows):
    """``model`` with a callback recording ``(elapsed s, bound per row)`` at every iteration
    (the exact collapsed bound for L-BFGS-B); returns the trace list it fills."""
    trace = []
    model.set_params(callback=lambda est, info: trace.append(
        (info["elapsed"], info["bound"] / n_rows)))
    return trace


def _thinned(trace, points=400):
    keep = np.unique(np.linspace(0, len(trace) - 1, min(points, len(trace))).astype(int))
    return [[round(trace[i][0], 3), trace[i][1]] for i in keep]


def part_elbo(args):
    X = _data(args.n_rows)
    N = X.shape[0]
    collapsed = _model(args)
    trace = _traced(collapsed, N)
    t_c = _fit(collapsed, X)
    e_c = collapsed.elbo_ / N
    within = [t for t, e in trace if (e_c - e) <= 0.01 * abs(e_c)]
    rows = [["collapsed (" + collapsed.optimizer_ + ")", collapsed.n_iter_, f"{t_c:.1f}",
             f"{e_c:.5f}", "1", "0"]]
    runs = []
    for epochs in args.epoch_list or [2 ** k for k in range(args.max_epochs.bit_length())]:
        model = _svi(args, epochs)
        t = _fit(model, X)
        e = model.elbo_ / N
        gap = (e_c - e) / abs(e_c)
        runs.append({"epochs": epochs, "seconds": t, "elbo_per_row": e, "time_ratio": t / t_c,
                     "relative_gap": gap})
        rows.append([f"svi {epochs} epochs", epochs, f"{t:.1f}", f"{e:.5f}", f"{t / t_c:.3f}",
                     f"{100 * gap:.2f} %"])
    print(markdown_table(["fit", "iterations / epochs", "wall s", "ELBO per row",
                          "time / collapsed", "ELBO gap"], rows))
    met = [r for r in runs if r["relative_gap"] <= 0.01 and r["time_ratio"] <= 0.2]
    print(f"target (gap <= 1 % in <= 1/5 of the collapsed time): "
          f"{'met at ' + str(met[0]['epochs']) + ' epochs' if met else 'not met'}")
    print(f"collapsed fit within 1 % of its final ELBO after {within[0]:.1f} s" if within else "")
    return {"n_rows": N, "collapsed": {"seconds": t_c, "elbo_per_row": e_c,
                                       "optimizer": collapsed.optimizer_,
                                       "n_iter": int(collapsed.n_iter_),
                                       "seconds_to_within_1pc": within[0] if within else None,
                                       "trace": _thinned(trace)}, "svi": runs}


def _one_scale(args, n_rows):
    """One scaling point (run in a subprocess): wall time and peak RSS of an SVI fit."""
    X = _data(n_rows)
    model = _svi(args, args.epochs)
    t = _fit(model, X)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    return {"n_rows": n_rows, "epochs": int(model.n_iter_), "seconds": t,
            "seconds_per_epoch": t / max(1, model.n_iter_),
            "elbo_per_row": model.elbo_ / n_rows, "peak_rss_bytes": peak}


def part_scale(args):
    out = []
    for n in args.scale_rows:
        cmd = [sys.executable, __file__, "--one-scale", str(n)] + _forwarded(args)
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        out.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(markdown_table(
        ["N", "epochs", "wall s", "s / epoch", "s / epoch / 10⁶ rows", "peak RSS GB",
         "ELBO per row"],
        [[r["n_rows"], r["epochs"], f"{r['seconds']:.1f}", f"{r['seconds_per_epoch']:.2f}",
          f"{r['seconds_per_epoch'] / r['n_rows'] * 1e6:.2f}",
          f"{r['peak_rss_bytes'] / 2 ** 30:.2f}", f"{r['elbo_per_row']:.4f}"] for r in out]))
    return out


def _forwarded(args):
    return ["--threads", str(args.threads), "--n-inducing", str(args.n_inducing),
            "--batch-size", str(args.batch_size), "--learning-rate", str(args.learning_rate),
            "--natgrad-gamma", str(args.natgrad_gamma), "--epochs", str(args.epochs)] + (
                ["--encoder", args.encoder] if args.encoder else [])


def plot(payloads, path):
    """ELBO per row against wall time, one or more runs' ``payloads`` (each its own collapsed
    fit, so that every SVI series is compared with the collapsed fit of its run): the collapsed
    fit's L-BFGS-B trace and the SVI fits' final ELBOs, with the target's lines from the first
    run (1 % below the collapsed final; 1/5 of its time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    lows = []
    for i, payload in enumerate(payloads):
        elbo, a = payload["elbo"], payload["args"]
        c = elbo["collapsed"]
        svi = sorted((r["seconds"], r["elbo_per_row"], r["epochs"]) for r in elbo["svi"])
        t, e = zip(*c["trace"], strict=True)
        ax.plot(t, e, color="C0", linewidth=1.5 - 0.6 * i, alpha=1.0 - 0.4 * i,
                label=f"collapsed ({c['optimizer']}), per iteration" if i == 0 else None)
        kind = f"encoder={a['encoder']!r}" if a.get("encoder") else "q(x_n) per row"
        ax.plot([r[0] for r in svi], [r[1] for r in svi], "o-", color=f"C{i + 1}",
                label=f"SVI, {kind}: a fit of k epochs (k marked)")
        for x, y, k in svi:
            ax.annotate(str(k), (x, y), textcoords="offset points", xytext=(3, -10), fontsize=7)
        lows.append(min(r[1] for r in svi))
    elbo, a = payloads[0]["elbo"], payloads[0]["args"]
    e_c, t_c = elbo["collapsed"]["elbo_per_row"], elbo["collapsed"]["seconds"]
    ax.axhline(e_c - 0.01 * abs(e_c), color="grey", linestyle="--", linewidth=1,
               label="1 % below the collapsed final")
    ax.axvline(t_c / 5, color="grey", linestyle=":", linewidth=1, label="1/5 of the collapsed time")
    low = min(min(lows), e_c - 0.1 * abs(e_c))
    ax.set_ylim(low - 0.05 * abs(low), e_c + 0.05 * abs(e_c))
    ax.set_xscale("log")
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("ELBO per row")
    ax.set_title(f"N = {elbo['n_rows']}, D = {D}, Q = {Q}, M = {a['n_inducing']}, "
                 f"{a['threads']} threads; SVI: batches of {a['batch_size']}, "
                 f"learning_rate={a['learning_rate']}", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="elbo,scale")
    p.add_argument("--n-rows", type=int, default=50_000)
    p.add_argument("--max-epochs", type=int, default=64)
    p.add_argument("--epoch-list", default=None,
                   help="comma-separated epoch counts of the SVI fits (default 1, 2, 4, ... "
                        "up to --max-epochs)")
    p.add_argument("--scale-rows", default="100000,250000,500000,1000000")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--n-inducing", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--natgrad-gamma", type=float, default=0.1)
    p.add_argument("--encoder", default=None, choices=[None, "mlp"],
                   help="the SVI fits' encoder (amortised q(x_n))")
    p.add_argument("--label", default="local")
    p.add_argument("--quick", action="store_true", help="write under results/quick/")
    p.add_argument("--plot", default=None, help="write the ELBO-against-time figure here")
    p.add_argument("--plot-from", default=None,
                   help="only redraw --plot from these comma-separated JSONs of earlier runs")
    p.add_argument("--one-scale", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    ensure_repo_on_path()
    if args.plot_from is not None:
        plot([json.loads(Path(f).read_text()) for f in args.plot_from.split(",")], args.plot)
        return
    if args.one_scale is not None:
        print(json.dumps(_one_scale(args, args.one_scale)))
        return
    args.scale_rows = [int(v) for v in args.scale_rows.split(",")]
    args.epoch_list = args.epoch_list and [int(v) for v in args.epoch_list.split(",")]
    parts = args.parts.split(",")
    payload = {"machine": machine_info(), "args": {k: v for k, v in vars(args).items()}}
    if "elbo" in parts:
        payload["elbo"] = part_elbo(args)
    if "scale" in parts:
        payload["scale"] = part_scale(args)
    print(write_json(f"svi_gplvm_{args.label}", payload, quick=args.quick))
    if args.plot and "elbo" in payload:
        plot([payload], args.plot)


if __name__ == "__main__":
    main()
