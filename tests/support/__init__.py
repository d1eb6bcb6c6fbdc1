"""The tests' one support area: plain functions, classes and fixtures' building blocks that every tier's tests and
conftests import (``tests.support.<name>``); nothing here is a test, and nothing outside ``tests`` imports it.
"""
