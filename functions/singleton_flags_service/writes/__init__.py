"""The write path: version-conditioned changes with their audit record, exactly once."""
