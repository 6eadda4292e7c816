"""linalg rules (to be filled)."""
