"""Compiles the modules ``berth/native.py`` lists with mypyc (pyproject.toml has the rest of
the package's settings). ``BERTH_COMPILED=0`` builds without them, and so does a machine whose
C compiler fails (it says so): berth then runs them from source, unchanged but slower."""

import importlib.util
import os

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

spec = importlib.util.spec_from_file_location("berth_native", "berth/native.py")
assert spec is not None and spec.loader is not None
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)


class BuildOrSource(build_ext):
    """The compiled group, or, where no C compiler works, none of it rather than no install."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError) as exc:
            self.warn(f"berth: the compiled modules are not built ({exc}); they run from source")


modules = []
if os.environ.get(native.SWITCH) != "0":
    from mypyc.build import mypycify

    root = native.Path(".")
    native.stamp(root, native.COMPILED)
    sources = [str(native.source(root, name)) for name in native.COMPILED]
    # Modules outside the group are read for their types only (not checked here).
    modules = mypycify(
        [*sources, "--ignore-missing-imports", "--follow-imports=silent"], opt_level="3"
    )

setup(ext_modules=modules, cmdclass={"build_ext": BuildOrSource})
