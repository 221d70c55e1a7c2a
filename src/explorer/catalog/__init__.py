"""Named models: where their files live, installing and checking them, loading one by name."""
