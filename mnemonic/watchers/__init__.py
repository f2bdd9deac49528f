"""Perception sources: filesystem, shell history, clipboard and git watchers."""
