"""craps-streams: event-sourced settlement of craps side wagers (58 Pa. Code ch. 623a, 623c)."""
