"""Pure tests: no socket, no thread of their own, no subprocess; MockClock where time matters."""
