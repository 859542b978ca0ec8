"""The one PCA and the k-means of ``_core.init``: PCA is scikit-learn's, bit for bit."""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from sklearn_lvgp._core.init import (
    kmeans_centres,
    kmeans_inducing,
    pca_components,
    pca_components_of_scatter,
    pca_latents,
    principal_axes,
    principal_directions,
)


@pytest.mark.parametrize("shape, q", [((30, 4), 2), ((6, 5), 5), ((40, 3), 3)])
def test_pca_is_scikit_learns(rng, shape, q):
    X = rng.standard_normal(shape) * np.arange(1, shape[1] + 1)
    pca = PCA(n_components=q, svd_solver="full").fit(X)
    np.testing.assert_array_equal(pca_components(X, q), pca.components_)
    np.testing.assert_allclose(pca_latents(X, q), pca.transform(X), atol=1e-12)


def test_pca_pads_and_handles_constant_data(rng):
    X = rng.standard_normal((5, 2))
    P = pca_components(X, 4)
    np.testing.assert_array_equal(P[2:], 0.0)
    np.testing.assert_array_equal(pca_components(np.ones((5, 3)), 2), np.eye(2, 3))
    Z = pca_latents(X, 4)
    assert Z.shape == (5, 4) and np.all(np.std(Z[:, 2:], axis=0) > 0)


@pytest.mark.parametrize("shape, q", [((30, 4), 2), ((6, 5), 5), ((4, 3), 3)])
def test_pca_from_the_scatter_matrix_is_the_pca_of_the_rows(rng, shape, q):
    X = rng.standard_normal(shape) * np.arange(1, shape[1] + 1)
    Xc = X - X.mean(axis=0)
    P = pca_components_of_scatter(Xc.T @ Xc, np.ptp(X, axis=0), shape[0], q)
    np.testing.assert_allclose(P, pca_components(X, q), atol=1e-10)
    np.testing.assert_array_equal(pca_components_of_scatter(np.zeros((3, 3)), np.zeros(3), 5, 2),
                                  np.eye(2, 3))


def test_uncentred_axes_are_right_singular_vectors(rng):
    X = rng.standard_normal((20, 4)) + 3.0
    axes, Xc = principal_axes(X, 2, center=False, fix_signs=False)
    assert Xc is X
    np.testing.assert_array_equal(axes, np.linalg.svd(X, full_matrices=False)[2][:2])


def test_principal_directions_scaled_and_unit(rng):
    X = rng.standard_normal((50, 3)) * [3.0, 1.0, 0.2]
    scaled = principal_directions(X, 5, np.random.RandomState(0))
    unit = principal_directions(X, 5, np.random.RandomState(0), scaled=False)
    np.testing.assert_allclose(np.linalg.norm(unit[:, :3], axis=0), 1.0)
    np.testing.assert_array_equal(scaled[:, 3:], unit[:, 3:])
    vals = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))[::-1]
    np.testing.assert_allclose(np.linalg.norm(scaled[:, :3], axis=0), np.sqrt(vals))


def test_kmeans_centres_are_distinct_points(rng):
    X = np.vstack([rng.standard_normal((10, 2)) + c for c in ([0, 0], [5, 5], [-5, 5])])
    C = kmeans_centres(X, 3, seed=0, n_init=5)
    np.testing.assert_allclose(np.sort(C[:, 0]), [-5.0, 0.0, 5.0], atol=1.0)
    np.testing.assert_array_equal(kmeans_centres(X[:3], 3, seed=0), X[:3])
    Z = kmeans_inducing(X, 3, np.random.RandomState(0))
    assert np.unique(np.round(Z, 10), axis=0).shape[0] == 3
