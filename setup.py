"""The wheel's tag: gseek ships x86-64 Linux machine code (kernels/prebuilt/, kernels/cubin/,
kernels/cupy_cache/), so a wheel built on x86-64 Linux is tagged for that platform
(``py3-none-manylinux_2_28_x86_64``), not ``py3-none-any``; elsewhere the wheel is pure (the shipped
code is not for that host, and every kernel compiles on first use there). Everything else is in
pyproject.toml; docs/startup.md, "Packaging".
"""

import platform
import sys

from setuptools import setup

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

#: The platform the shipped machine code is for, as a wheel tag: Numba 0.68's own wheels need glibc 2.28.
PLATFORM_TAG = "manylinux_2_28_x86_64"


def shipped_platform() -> str | None:
    """:data:`PLATFORM_TAG` when building on the platform the shipped code runs on, else None (a pure wheel)."""
    return PLATFORM_TAG if sys.platform == "linux" and platform.machine() == "x86_64" else None


class PlatformWheel(bdist_wheel):
    """``bdist_wheel`` tagging the wheel ``py3-none-<platform>`` (any Python 3, no ABI: no extension
    module; the prebuilt sets serve the Pythons they name and the others compile). The files still go
    to purelib (``Root-Is-Purelib: true``): they are data to Python, not modules linked to it."""

    def get_tag(self):
        tag = super().get_tag()
        where = shipped_platform()
        return ("py3", "none", where) if where else tag


setup(cmdclass={"bdist_wheel": PlatformWheel})
