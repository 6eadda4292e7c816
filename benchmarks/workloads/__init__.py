"""One module per framework, each defining the same workloads (see
``benchmarks/common.py`` for the shared definitions).

Every module exposes ``setup(threads)``, ``version()``, ``threads()`` and
``build(workload, data, cfg, **opts) -> common.Bench``; importing a module
raises ImportError when its framework is not installed (the run skips it).
"""
