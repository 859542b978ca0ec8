"""The one small MLP: finite-difference VJP for every activation and option."""

import numpy as np
import pytest

from sklearn_lvgp.nn._mlp import mlp_forward, mlp_vjp
from sklearn_lvgp.utils.gradcheck import check_vjp


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize(("activate_last", "residual"), [(False, False), (True, False),
                                                         (False, True)])
def test_mlp_vjp(rng, activation, activate_last, residual):
    widths = [3, 4, 4, 2]
    params = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        params += [rng.standard_normal((a, b)), 0.1 * rng.standard_normal(b)]
    names = [f"p{k}" for k in range(len(params))]
    inputs = {"X": rng.standard_normal((6, 3)), **dict(zip(names, params, strict=True))}

    def forward(X, **kw):
        return mlp_forward([kw[n] for n in names], X, activation, activate_last, residual)[0]

    def backward(w, X, **kw):
        plist = [kw[n] for n in names]
        grads, dX = mlp_vjp(w, plist, mlp_forward(plist, X, activation, activate_last,
                                                  residual)[1])
        return {"X": dX, **dict(zip(names, grads, strict=True))}

    check_vjp(forward, backward, inputs, rng, rtol=1e-5)


def test_unknown_activation():
    with pytest.raises(ValueError, match="activation must be one of"):
        mlp_forward([np.eye(2), np.zeros(2)], np.ones((1, 2)), "sigmoid")
