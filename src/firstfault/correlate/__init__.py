"""Correlate: matches -> one diagnosis (first fault, collateral, candidates). Pure functions."""
from .verdict import correlate

__all__ = ["correlate"]
