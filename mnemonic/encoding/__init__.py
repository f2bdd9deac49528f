"""Turning raw observations into memories: heuristics, linking and the encoding worker."""
