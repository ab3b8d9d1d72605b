"""Checks (not yet implemented)."""
