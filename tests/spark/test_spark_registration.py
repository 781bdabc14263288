"""format("gregor") is found the way Spark looks for Python data sources: a top-level module
named pyspark_<name> with a DefaultSource class (and explicitly through register())."""
import importlib

import pytest

pytestmark = pytest.mark.spark


def test_pyspark_gregor_exposes_the_data_source():
    from pyspark.sql.datasource import DataSource
    mod = importlib.import_module("pyspark_gregor")
    assert issubclass(mod.DefaultSource, DataSource)
    assert mod.DefaultSource.name() == "gregor"


def test_register_makes_the_format_known(spark):
    from gregor.spark import register
    register(spark)
    assert spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists("gregor")


def test_default_editable_install_is_found_by_pyspark(tmp_path):
    """`pip install -e .` (pip's default editable mode, not make venv's compat mode) into a
    fresh venv, then PySpark's own lookup of Python data sources (pkgutil.iter_modules over
    sys.path, names starting with pyspark_, a DefaultSource; pyspark/sql/worker/
    lookup_data_sources.py) run from outside the checkout: it must find format("gregor").
    setuptools' default editable mode installs an import hook that such a scan cannot see,
    unless the layout is declared (package-dir in pyproject.toml)."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # the test venv borrows this interpreter's site-packages (setuptools, pyspark, ...) but
    # not its gregor install: a path in a .pth file is added to sys.path, the .pth files inside
    # it (this venv's own editable gregor) are not read
    borrowed = [p for p in sys.path if "site-packages" in p and Path(p).is_dir()]
    Path(site, "zz-borrowed.pth").write_text("\n".join(borrowed) + "\n")
    # the venv's own old setuptools (from ensurepip) would shadow the borrowed one
    subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True,
                   timeout=120, capture_output=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-e", str(repo)], check=True, timeout=600,
                   capture_output=True, cwd=tmp_path)
    lookup = (
        "from importlib import import_module\n"
        "from pkgutil import iter_modules\n"
        "from pyspark.sql.datasource import DataSource\n"
        "found = {}\n"
        "for info in iter_modules():\n"
        "    if info.name.startswith('pyspark_'):\n"
        "        mod = import_module(info.name)\n"
        "        if issubclass(getattr(mod, 'DefaultSource', object), DataSource):\n"
        "            found[mod.DefaultSource.name()] = mod.__file__\n"
        "print(found.get('gregor'))\n")
    out = subprocess.run([str(py), "-c", lookup], check=True, capture_output=True, text=True,
                         cwd=tmp_path, timeout=120).stdout.strip()
    assert out == str(repo / "pyspark_gregor.py")
