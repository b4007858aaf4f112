"""Where faults meet: workers killed or drained mid-turn, servers cut, bad input."""
