"""Benchmarks that print their figures (not tests): ``python -m bench`` runs them all."""
