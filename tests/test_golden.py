"""Golden outputs: every estimator configuration of the common checks, refitted, gives the
outputs recorded in ``tests/golden/golden_outputs.npz`` (see ``tests/golden/golden_cases.py``).

These pin what a user sees while the package's internals are reorganised: predictions,
densities, embeddings, ``elbo_`` and every fitted array. Regenerate the file only for a
deliberate change of results, and say in the commit which cases moved and why.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
from golden_cases import GOLDEN_FILE, cases, outputs  # noqa: E402

_GOLDEN = dict(np.load(GOLDEN_FILE))
_CASES = cases()

#: Relative tolerance. The recording machine reproduces the file bit for bit; the tolerance
#: only absorbs a different BLAS's summation order, amplified by up to a few hundred
#: optimiser iterations.
RTOL = 1e-7


@pytest.mark.parametrize("case_id,estimator", _CASES, ids=[c for c, _ in _CASES])
def test_golden_outputs(case_id, estimator):
    got = outputs(case_id, estimator)
    expected = {k: v for k, v in _GOLDEN.items() if k.startswith(case_id + "/")}
    assert expected, f"no golden outputs recorded for {case_id}"
    assert sorted(got) == sorted(expected), (
        f"outputs added: {sorted(set(got) - set(expected))}; "
        f"missing: {sorted(set(expected) - set(got))}")
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        if value.dtype.kind == "f":
            scale = max(1.0, float(np.max(np.abs(value), initial=0.0)))
            np.testing.assert_allclose(got[key], value, rtol=RTOL, atol=RTOL * scale,
                                       err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], value, err_msg=key)
