"""The flags service: what runs in Lambda (its handlers, and the feature packages below them)."""
