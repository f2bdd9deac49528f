"""The reactor: rules as data (event type + condition + action + cooldown) that start the
thinking half's agents when something happens (``rules`` parses and validates them,
``matcher`` evaluates conditions, ``cooldown`` spaces fires, ``runner`` listens on the bus)."""
