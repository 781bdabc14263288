"""Helpers shared by the test suites (broker processes, ...)."""
