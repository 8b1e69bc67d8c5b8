"""Alignment metrics of the PRH benchmark: exact, calibrated, fast at large N."""
