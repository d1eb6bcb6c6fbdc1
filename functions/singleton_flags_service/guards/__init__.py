"""Guarded changes: a change reverted when an alarm fires during its bake."""
