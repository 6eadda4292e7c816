"""Property-based rule testing (see chainrules.testing.checks)."""
