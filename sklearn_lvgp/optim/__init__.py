"""Optimisers: L-BFGS-B, Adam (with natural-gradient steps and schedules), and the alternating
local/global steps of the collapsed GPLVM bound."""
