"""What every coordinator shares: settings, error codes, keys, the internal topics they keep their state in."""
