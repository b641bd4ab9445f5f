"""Builds the forkfeed Python package with the project's own CMake, offline:

    pip install --no-build-isolation .

with the Debian packages tools/setup.sh installs (pybind11 among them): nothing is
downloaded. The package holds its own libforkfeed and forkfeed-worker, found through
$ORIGIN run paths, so it works wherever it is installed. $FORKFEED_CMAKE_ARGS adds
arguments to CMake's configure, e.g. "-DFORKFEED_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache".
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version() -> str:
    """The version in CMakeLists.txt's project(), the one place it is written."""
    match = re.search(r"project\(forkfeed VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if match is None:
        sys.exit("setup.py: no 'project(forkfeed VERSION ...)' in CMakeLists.txt")
    return match.group(1)


class CMakeBuild(build_ext):
    """Builds only what the package needs (the extension, libforkfeed, forkfeed-worker)
    and installs CMake's `python` component in FORKFEED_PYTHON_WHEEL's layout, all in
    the package directory, where setuptools packs it."""

    def build_extension(self, ext: Extension) -> None:
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        extension = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DFORKFEED_BUILD_TESTS=OFF", "-DFORKFEED_PYTHON=ON", "-DFORKFEED_PYTHON_WHEEL=ON",
                     "-DFORKFEED_PYTHON_INSTALL_DIR=.", f"-DPython3_EXECUTABLE={sys.executable}",
                     *shlex.split(os.environ.get("FORKFEED_CMAKE_ARGS", ""))]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_forkfeed",
                        "--parallel", str(os.cpu_count() or 1)], check=True)
        # The package directory's parent: the install puts forkfeed/ there.
        subprocess.run(["cmake", "--install", str(build_dir), "--component", "python",
                        "--prefix", str(extension.parents[1])], check=True)
        if not extension.exists():
            sys.exit(f"setup.py: CMake installed no {extension.name} in {extension.parent}; "
                     f"is {sys.executable} the interpreter CMake found?")


setup(
    name="forkfeed",
    version=project_version(),
    description="A forking image data loader whose batches reach PyTorch without a copy",
    python_requires=">=3.9",
    packages=["forkfeed"],
    package_dir={"": "python"},
    package_data={"forkfeed": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("forkfeed._forkfeed", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # build/ is CMake's build directory in a checkout; setuptools keeps to its own.
    options={"build": {"build_base": "build-python"}},
    zip_safe=False,
)
