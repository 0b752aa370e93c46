"""The search: sampler and pruner registry, the space, the study."""
