"""Completion providers (an OpenAI-compatible endpoint, or litellm as an optional extra)
behind one narrow protocol, with deadlines, retries, a circuit breaker and usage rows."""
