"""nondiff rules (to be filled)."""
