"""Test configuration: the hypothesis profile comes from chainrules' pytest
plugin (``ci`` by default: derandomized, bounded; ``--hypothesis-profile
thorough`` for long local runs)."""
