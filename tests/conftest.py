"""Shared fixtures: seeded generators and tiny problems."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A fresh, seeded generator per test (no global seeding)."""
    return np.random.default_rng(20211)


@pytest.fixture
def tiny_gplvm_data():
    """N=15, D=4 rows from a smooth 2-D latent curve plus noise."""
    r = np.random.default_rng(7)
    t = np.linspace(-1.5, 1.5, 15)
    latent = np.column_stack([t, np.sin(2 * t)])
    W = r.standard_normal((2, 4))
    return np.tanh(latent @ W) + 0.05 * r.standard_normal((15, 4))


@pytest.fixture
def shared_data():
    """The offline datasets folder (``../shared/data``), or skip the test when it is absent."""
    from sklearn_lvgp.datasets import data_home

    try:
        return data_home()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
