"""Likelihoods: variational expectations ``E_q[log p(y | f)]`` with their backward passes, and
predictive densities."""
