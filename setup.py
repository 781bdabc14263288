"""The one build step pyproject.toml cannot declare: compiling send()'s fast path
(gregor/client/producer/_fastpath.pyx) with Cython. The extension is optional: without Cython
or a C compiler the install still succeeds and send() runs its Python path (slower; see
gregor/client/producer/fastpath.py). `make test` checks that it was built."""
from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("gregor.client.producer._fastpath", ["gregor/client/producer/_fastpath.pyx"],
                   optional=True)],
        compiler_directives={"language_level": 3})

setup(ext_modules=ext_modules)
