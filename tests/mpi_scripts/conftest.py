"""The scripts here run under ``mpiexec -n 2`` (tests/test_distributed_mpi.py
launches them); pytest's doctest collection must not import them, since
importing one runs it."""

collect_ignore_glob = ["*.py"]
