"""The in-process event bus and the event types every component speaks."""
