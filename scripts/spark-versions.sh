#!/usr/bin/env bash
# Run the Spark tests on the oldest PySpark gregor supports (the floor in pyproject.toml's
# `spark` extra) and on the newest one installed by `make venv`.
#
#   scripts/spark-versions.sh [pytest args...]      (make test-spark-versions)
#
# The floor gets a venv of its own, .venv-pyspark-<version>, holding only PySpark (and its
# py4j) and reaching every other package through the main .venv (a .pth file): its own
# site-packages come first on sys.path, so `import pyspark` is the floor's, and Spark's
# Python workers (PYSPARK_PYTHON, the tests' conftest sets it to this interpreter) too.
set -euo pipefail
cd "$(dirname "$0")/.."
main=.venv
[ -x "$main/bin/python" ] || { echo "run 'make venv' first" >&2; exit 1; }
floor=$(sed -n 's/.*"pyspark>=\([0-9.]*\)".*/\1/p' pyproject.toml)
[ -n "$floor" ] || { echo "no pyspark>=X floor in pyproject.toml" >&2; exit 1; }
venv=".venv-pyspark-$floor"
if [ ! -f "$venv/.installed" ]; then
    "$main/bin/python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q "pyspark==$floor"
    # ensurepip's old setuptools would shadow .venv's (the editable-install test builds with it)
    "$venv/bin/python" -m pip uninstall -q -y setuptools
    main_site=$("$main/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    floor_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$main_site" > "$floor_site/zz-gregor-main-venv.pth"
    touch "$venv/.installed"
fi
status=0
for py in "$venv/bin/python" "$main/bin/python"; do
    version=$("$py" -c 'import pyspark; print(pyspark.__version__)')
    echo "== PySpark $version ($py)"
    "$py" -m pytest -q -p no:cacheprovider tests/spark "$@" || status=1
done
exit $status
