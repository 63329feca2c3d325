# SPDX-License-Identifier: Apache-2.0
# The package's version: the CMake project version (project(wharf VERSION ...) in the top-level
# CMakeLists.txt). setup.py reads it from here; tests/python/test_package.py checks that the two
# agree, so a release bumps both or the tests fail.
__version__ = "0.1.0"
