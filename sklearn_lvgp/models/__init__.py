"""The estimators, one module each."""
