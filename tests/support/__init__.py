"""Test helpers shared by several test modules (real servers and fixtures, not mocks)."""
