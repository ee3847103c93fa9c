"""Builds the two compiled pieces: the record walk of the produce validator (kafkalite/validation/_walk.c) and
the streaming raw-snappy decoder of storage (storage/_snappy.c).

Everything else is in pyproject.toml. Both extensions are optional: without a C compiler the install still
succeeds; kafkalite then uses the identical pure-Python walk (kafkalite/validation/pywalk.py), only slower, and
decodes a raw snappy block whole (cramjam), as before the streaming decoder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kafkalite.validation._walk", ["kafkalite/validation/_walk.c"], optional=True,
                  extra_compile_args=["-O3"]),
        Extension("kafkalite_storage._snappy", ["storage/_snappy.c"], optional=True,
                  extra_compile_args=["-O3"]),
    ]
)
