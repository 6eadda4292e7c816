"""Test configuration. Tiers and hypothesis profiles come from chainrules'
pytest plugin (``chainrules/testing/plugin.py``): the default run is the
fast tier (``chainrules_tier = "fast"`` in pyproject.toml: profile ``fast``,
a sample of the spec sweeps, no ``slow`` tests); ``--full`` runs everything.
Nothing here imports the peers or builds the sweep: running one file with
``-x`` costs only that file."""

# pytester: the plugin's own tests run small pytest sessions
pytest_plugins = ["pytester"]
