"""The exchange protocols, as code: DLPack, the NumPy array interface, CUDA Array Interface."""
