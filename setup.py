"""Builds the one compiled piece, the record walk of the produce validator (kafkalite/validation/_walk.c).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the install still
succeeds and kafkalite uses the identical pure-Python walk (kafkalite/validation/pywalk.py), only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kafkalite.validation._walk", ["kafkalite/validation/_walk.c"], optional=True,
                  extra_compile_args=["-O3"]),
    ]
)
