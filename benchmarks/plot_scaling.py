"""Plot the ``scaling`` benchmark's results (thread curve and peak RSS) for the user guide.

Usage::

    python benchmarks/plot_scaling.py   # writes doc/images/scaling.png

It reads ``benchmarks/results/scaling_threads_device16_3972eef_r5.json`` (16-core thread curve),
``scaling_threads_device16_before.json`` (the code before the engine, same script) and the
``scaling_rss_*`` files written by ``bench_scaling.py``.
"""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OUT = HERE.parent / "doc" / "images" / "scaling.png"


def _load(name):
    return json.loads((RESULTS / name).read_text())


def main():
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    now = _load("scaling_threads_device16_3972eef_r5.json")["results"]
    before = _load("scaling_threads_device16_before.json")["results"]
    for (name, res), colour in zip(now.items(), ("C0", "C1", "C2"), strict=True):
        threads = [int(t) for t in res]
        ax_t.plot(threads, [v["speedup_median"] for v in res.values()], "o-", color=colour,
                  label=name)
        old = before.get(name, {})
        if old:
            ax_t.plot([int(t) for t in old], [v["speedup_median"] for v in old.values()], "x--",
                      color=colour, alpha=0.6)
    ax_t.plot([1, 16], [1, 16], ":", color="grey", label="linear")
    ax_t.set(xscale="log", yscale="log", xlabel="threads", ylabel="speed-up over 1 thread",
             title="bound + gradient, N = 50 000 (dashed: before)")
    ax_t.set_xticks([1, 2, 4, 8, 16], labels=["1", "2", "4", "8", "16"])
    ax_t.set_yticks([1, 2, 4, 8, 16], labels=["1", "2", "4", "8", "16"])
    ax_t.legend(fontsize=7)
    series = [("scaling_rss_device16_m100.json", "100", 'L-BFGS-B, M = 100 (16 threads)'),
              ("scaling_rss_local_2core_alternating.json", "20", "alternating, M = 20"),
              ("scaling_rss_local_2core_alternating_m100.json", "100", "alternating, M = 100")]
    for name, M, label in series:
        res = _load(name)["results"][M]
        rows = [int(n) for n, v in res.items() if v]
        ax_m.plot(rows, [res[str(n)]["peak_rss_MB"] / 1024 for n in rows], "o-", label=label)
    ax_m.axhline(2.0, color="grey", ls=":", label="2 GB")
    ax_m.set(xscale="log", xlabel="rows N", ylabel="peak RSS (GB)",
             title="UnscentedGPLVM fit, D = 12, Q = 5")
    ax_m.legend(fontsize=7)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
