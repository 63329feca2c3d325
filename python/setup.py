# pip install ./python  (works offline: setuptools from the system, no build isolation needed
# because there is no pyproject.toml). libwharf itself is found at run time: $WHARF_LIB,
# $WHARF_BUILD_DIR/libwharf.so, or the system's libwharf.so.0 (cmake --install).
from setuptools import setup

setup(
    name="wharf",
    version="0.1.0",
    description="Python bindings of libwharf (S3 with an RDMA data path), and wharf.torch",
    packages=["wharf", "wharf.torch"],
    python_requires=">=3.9",
    install_requires=[],
    extras_require={"torch": ["torch", "numpy"]},
)
