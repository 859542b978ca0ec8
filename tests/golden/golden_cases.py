"""Golden outputs of every estimator in the configurations whose code paths differ.

Each case fits one estimator on small fixed data and collects, through public API only, its
predictions (``predict`` with ``return_std``, ``predict_proba``, ``transform``,
``inverse_transform``, ``score_samples``, ``predict_log_density``) and every numeric fitted
attribute (``elbo_``, latent and inducing arrays, kernel ``theta``, layer parameters).
``python tests/golden/golden_cases.py`` writes ``golden_outputs.npz`` beside this file; the
test ``tests/test_golden.py`` refits every case and compares. The cases are the configurations
of ``tests/test_common.py`` (fast settings and variants), so any estimator path the common
checks exercise is pinned here too.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone

HERE = Path(__file__).resolve().parent
GOLDEN_FILE = HERE / "golden_outputs.npz"
#: Estimators, and case ids of configurations, whose outputs are not recorded: the imputer
#: composes an UnscentedGPLVM, whose outputs (``transform``, ``inverse_transform``) are pinned by
#: that estimator's cases.
NOT_PINNED = {"GPLVMImputer"}


def _data():
    r = np.random.default_rng(2024)
    t = r.uniform(-2, 2, size=(36, 1))
    X_reg = np.column_stack([t[:, 0], np.cos(t[:, 0]) + 0.1 * r.standard_normal(36),
                             r.standard_normal(36)])
    y_reg = np.sin(2 * t[:, 0]) + 0.1 * r.standard_normal(36)
    latent = np.column_stack([np.linspace(-1.5, 1.5, 30), np.sin(np.linspace(-3, 3, 30))])
    X_lv = np.tanh(latent @ r.standard_normal((2, 5))) + 0.05 * r.standard_normal((30, 5))
    y_cls = np.repeat([0, 1, 2], 10)
    X_cls = X_lv + 0.6 * y_cls[:, None] * r.standard_normal((1, 5))
    return X_reg, y_reg, X_lv, X_cls, y_cls


def cases():
    """``(case id, estimator)`` for every fast configuration of the common checks."""
    sys.path.insert(0, str(HERE.parent))
    from test_common import FAST_PARAMS, VARIANTS

    from sklearn_lvgp.utils.discovery import all_estimators
    out = []
    for name, cls in all_estimators():
        if name in NOT_PINNED:
            continue
        configs = [FAST_PARAMS.get(name, {})] + [
            {**FAST_PARAMS.get(name, {}), **v} for v in VARIANTS.get(name, [])]
        for i, params in enumerate(configs):
            if f"{name}-{i}" in NOT_PINNED:
                continue
            out.append((f"{name}-{i}", cls(**params)))
    return out


def _flatten(prefix, value, out, depth=0):
    if depth > 3:
        return
    if hasattr(value, "theta") and hasattr(value, "hyperparameters"):  # a kernel
        out[prefix + ".theta"] = np.asarray(value.theta, dtype=np.float64)
        return
    if isinstance(value, (bool, np.bool_)):
        out[prefix] = np.asarray(value)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        out[prefix] = np.asarray(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fiucb":
        out[prefix] = value
    elif isinstance(value, (list, tuple)):
        for j, item in enumerate(value):
            _flatten(f"{prefix}[{j}]", item, out, depth + 1)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            _flatten(f"{prefix}[{key}]", value[key], out, depth + 1)
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("sklearn_lvgp") \
            and not isinstance(value, type):
        for key in sorted(vars(value)):
            if not key.startswith("__"):
                _flatten(f"{prefix}.{key}", vars(value)[key], out, depth + 1)


#: Fitted attributes that are bookkeeping, not results (timings, compile reports).
_SKIP = ("fit_time_", "compile_time_")


def outputs(case_id, estimator):
    """Every public output of ``estimator`` fitted on the case's data, as a flat dict."""
    X_reg, y_reg, X_lv, X_cls, y_cls = _data()
    est = clone(estimator)
    out = {}
    name = case_id.split("-")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "UnscentedGPLVM":
            est.fit(X_lv)
            out["transform"] = est.transform(X_lv[:6] + 0.05)
            out["score_samples"] = est.score_samples(X_lv[:6])
            mean, std = est.inverse_transform(est.latent_mean_[:5], return_std=True)
            out["inverse_transform.mean"], out["inverse_transform.std"] = mean, std
        elif name == "LDGD":
            est.fit(X_cls, y_cls)
            out["predict_proba"] = est.predict_proba(X_cls[::3] + 0.05)
            out["transform"] = est.transform(X_cls[::3] + 0.05)
            out["inverse_transform"] = np.asarray(
                est.inverse_transform(est.transform(X_cls[:4])), dtype=np.float64)
        elif name == "DeepGPClassifier":
            est.fit(X_cls, y_cls)
            out["predict_proba"] = est.predict_proba(X_cls[::3] + 0.05)
            out["predict"] = est.predict(X_cls[::3] + 0.05)
        else:
            est.fit(X_reg, y_reg)
            X_new = X_reg[::4] + 0.03
            mean, std = est.predict(X_new, return_std=True)
            out["predict.mean"], out["predict.std"] = mean, std
            out["predict_log_density"] = est.predict_log_density(X_new, y_reg[::4])
    for key in sorted(vars(est)):
        if key.endswith("_") and not key.startswith("_") and key not in _SKIP:
            _flatten(key, vars(est)[key], out)
    return {f"{case_id}/{k}": np.asarray(v) for k, v in out.items()}


def main():
    everything = {}
    for case_id, est in cases():
        everything.update(outputs(case_id, est))
        print(case_id, flush=True)  # noqa: T201
    np.savez_compressed(GOLDEN_FILE, **everything)
    print(f"{len(everything)} arrays -> {GOLDEN_FILE}")  # noqa: T201


if __name__ == "__main__":
    main()
