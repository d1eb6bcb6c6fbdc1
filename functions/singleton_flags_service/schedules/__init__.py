"""Scheduled changes: a change applied once at a set time by a one-time Scheduler schedule."""
