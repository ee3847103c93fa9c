"""kafkalite's benchmarks (``make bench`` runs ``python -m bench.run_all``).

Each ``bench/bench_<name>.py`` exposes ``main()``: it reads its own flags from ``sys.argv[1:]`` (use
``argparse.ArgumentParser.parse_known_args``: the runner forwards every flag it does not know itself to
all modules), prints its results, and returns them as a JSON-serialisable dict. ``--quick`` is forwarded
to every module and ``BENCH_QUICK=1`` is set in its environment. A module may declare a module-level
``BENCH_TIMEOUT = <seconds>`` literal; the runner reads it without importing the module. How results
become markdown is described in ``bench._report``. Figures are ratios measured in one run, never timed
assertions in tests.
"""
