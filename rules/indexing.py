"""indexing rules (to be filled)."""
