#!/usr/bin/env bash
# Fills .whl/ (git-ignored) with the wheels that functrans needs and the GPU
# machine's image lacks: optree (at the version installed here) and its
# requirement typing-extensions, built for CPython 3.12 on x86-64 Linux.
# Carry .whl/ to that machine and install it there without an index; the
# command is in docs/gpu.md ("Running the GPU check").
set -euo pipefail

cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
optree=$("$python" -c "import importlib.metadata as m; print(m.version('optree'))")
rm -rf .whl
"$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "optree==$optree" typing-extensions
ls -1 .whl
