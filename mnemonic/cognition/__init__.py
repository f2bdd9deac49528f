"""The judgment of the thinking half (episodes, decay, merging, supersession): pure,
clock-injected functions tested without a daemon. Agents are the scheduled shells around
them (``mnemonic/agents/``)."""
