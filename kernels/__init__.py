"""Compute kernels: one ``<family>.cu`` file (CuPy ``RawModule``) per family,
plus a Numba twin module of the same name whose ``@njit`` functions carry the
kernels' names and argument order.

A family module defines ``CUDA_SOURCE`` (its ``.cu`` file name) and
``CONSTANTS`` (host/device constants, passed to NVRTC as ``-D`` options), and
one Numba function per CUDA kernel. Stages launch them through
:meth:`gseek.Backend.launch`; readable references live in ``tests/``.

Families:

* :mod:`gseek.kernels.seqpack` -- 2-bit packing with an N mask, reverse
  complement, w-gram codes.
* :mod:`gseek.kernels.fmindex` -- FM-index Occ, backward search, interval
  extension, sampled-SA locate (count -> prefix-sum -> fill).
"""
