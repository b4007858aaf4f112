"""Evaluations and reruns (the EvalsPlugin)."""
