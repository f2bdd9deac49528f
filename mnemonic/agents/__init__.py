"""Cognitive agents. Each is an async task over the store protocols and the bus; agents
never import each other or any face (a test reads the imports)."""
