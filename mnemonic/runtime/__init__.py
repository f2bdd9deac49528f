"""What keeps the daemon's background work alive: the clock, periodic jobs and the
supervisor that starts, restarts and stops agents."""
