"""Nested structures of arrays: a batch (``{"image": t, "label": t}``), a DALI pipeline's tuple
of outputs, a model's weights (a ``state_dict``, a Flax or Equinox parameter pytree).

``interop.to_framework(tree, target)`` returns the same structure with each array leaf
converted by its own cached plan and every other leaf kept as it is; ``explain`` gives a
:class:`~interop.structures.explain.StructurePlan` with one plan per leaf path. A structure's
plan is made once per structure (:mod:`.compile`) from the one walk of structures
(:mod:`.walk`), whose nodes pytree registries recognise (:mod:`.nodes`). A flat dict of
arrays may also be a table (:mod:`.adapter` decides which, and the ``structure=`` option
chooses).
"""
