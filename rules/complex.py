"""complex rules (to be filled)."""
