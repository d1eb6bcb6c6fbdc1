"""Test support shared by every tier: plain functions and classes that tests and conftests import.

``events``: API Gateway REST proxy events and the Lambda context, built as the local gateway builds them.
``tables``: the flags table on moto and reading what it holds (the singleton, the audit trail).
``write_workload``: the concurrent writers of the write-path proof (the bench measures the same run).
"""
