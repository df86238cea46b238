"""Array of structures <-> structure of arrays: the transpose, a kernel library of its own.

:mod:`~interop.transpose.records` checks the records or columns and hands the result on
through the registry it is given, :mod:`~interop.transpose.cpu` decides which host kernel
runs and shares the rows among threads, :mod:`~interop.transpose.llvm` is the compiled
kernel (its C calling convention declared once in :mod:`~interop.transpose.abi`), and
:mod:`~interop.transpose.cuda` the CuPy kernel for device arrays. The public calls are
``interop.aos_to_soa``, ``interop.soa_to_aos`` and ``interop.transpose_kernel``
(:mod:`interop.tabular`).
"""
