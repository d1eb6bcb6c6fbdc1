"""The write kernel: version-conditioned changes with their audit record, exactly once; features plug in."""
