"""pytest plugin: registers the chainrules hypothesis profiles."""
