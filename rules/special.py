"""special rules (to be filled)."""
