"""scipy_linalg rules (to be filled)."""
