"""Backends whose only job is to answer ``tw_diagnose`` for the ``tw doctor`` tests."""
