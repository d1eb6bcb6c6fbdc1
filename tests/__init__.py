"""The tests, one package: a folder per tier and one support area (docs/testing.md)."""
