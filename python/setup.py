# pip install ./python  (works offline: setuptools from the system, no build isolation needed
# because there is no pyproject.toml). libwharf itself is found at run time: $WHARF_LIB,
# $WHARF_BUILD_DIR/libwharf.so, or the system's libwharf.so.0 (cmake --install).
import os

from setuptools import setup

# One version, in wharf/_version.py (checked against CMake's project version by the tests).
_here = os.path.dirname(os.path.abspath(__file__))
_ns = {}
with open(os.path.join(_here, "wharf", "_version.py")) as f:
    exec(f.read(), _ns)

setup(
    name="wharf",
    version=_ns["__version__"],
    description="Python bindings of libwharf (S3 with an RDMA data path), and wharf.torch",
    packages=["wharf", "wharf.torch"],
    python_requires=">=3.9",
    install_requires=[],
    extras_require={"torch": ["torch", "numpy"]},
)
