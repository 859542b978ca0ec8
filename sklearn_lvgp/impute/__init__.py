"""Imputation of missing values with latent-variable GP models."""

from ._gplvm_imputer import GPLVMImputer

__all__ = ["GPLVMImputer"]
