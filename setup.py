"""The one build step pyproject.toml cannot declare: compiling gregor's optional Cython modules
(send()'s fast path, the records encoders for lists and for Arrow columns, the consumer's
Arrow decoder, the Avro column decoder and encoder). Without Cython or a C compiler the install
still succeeds and the Python code they shadow runs (slower; see gregor/compiled.py).
`make test` checks that they were built."""
from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("gregor.client.producer._fastpath", ["gregor/client/producer/_fastpath.pyx"],
                   optional=True),
         Extension("gregor.protocol.records._lists", ["gregor/protocol/records/_lists.pyx"],
                   optional=True),
         Extension("gregor.protocol.records._columns", ["gregor/protocol/records/_columns.pyx"],
                   optional=True),
         Extension("gregor.client.consumer._arrow_decode",
                   ["gregor/client/consumer/_arrow_decode.pyx"], optional=True),
         Extension("gregor.serde._avro_columns", ["gregor/serde/_avro_columns.pyx"],
                   optional=True),
         Extension("gregor.serde._avro_encode", ["gregor/serde/_avro_encode.pyx"],
                   optional=True)],
        compiler_directives={"language_level": 3})

setup(ext_modules=ext_modules)
