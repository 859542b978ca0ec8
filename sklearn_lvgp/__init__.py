"""sklearn_lvgp: scikit-learn-compatible latent-variable Gaussian-process models."""

__version__ = "0.1.0.dev0"
