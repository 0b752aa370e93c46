# forwarding until the controller imports tuner.search._registry
from tuner.search._registry import *  # noqa: F403
from tuner.search._registry import (  # noqa: F401
    NEEDS,
    PRUNERS,
    SAMPLERS,
    make_pruner,
    make_sampler,
    missing_dependency,
    module_available,
    search_space,
    torch_available,
)
