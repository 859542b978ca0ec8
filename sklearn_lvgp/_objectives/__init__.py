"""Variational bounds: values plus adjoints of their intermediates."""
