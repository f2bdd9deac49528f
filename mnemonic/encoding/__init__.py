"""Turning raw observations into memories: heuristics and linking (pure functions; the
encoding agent in ``mnemonic.agents.encoding`` runs them)."""
