"""webshepherd.protocol.agents — reward-guided agent helpers over the client SDK.

Best-of-n selection, feedback-driven refinement, policies and an episode loop
with the step-by-step, full-plan and tree-search paradigms. No browser or model imports:
an :class:`~webshepherd.protocol.agents.environment.Environment` supplies pages.
"""

from webshepherd.protocol.agents.best_of_n import (
    BestOfN,
    best_of_n,
    best_of_n_sync,
    group_proposals,
    select,
)
from webshepherd.protocol.agents.chat_policy import ChatPolicy
from webshepherd.protocol.agents.environment import (
    ActionError,
    ActionResult,
    Environment,
    PageState,
)
from webshepherd.protocol.agents.loop import (
    EpisodeOptions,
    EpisodeResult,
    StepResult,
    run_episode,
    run_episode_sync,
)
from webshepherd.protocol.agents.policy import (
    AsyncPolicy,
    PolicyContext,
    PolicyError,
    RefineRequest,
    as_policy,
)
from webshepherd.protocol.agents.refine import Refinement, refine, refine_sync
from webshepherd.protocol.agents.tree import SearchNode, SearchTree
from webshepherd.protocol.common import Turn

__all__ = [
    "ActionError",
    "ActionResult",
    "AsyncPolicy",
    "BestOfN",
    "ChatPolicy",
    "Environment",
    "EpisodeOptions",
    "EpisodeResult",
    "PageState",
    "PolicyContext",
    "PolicyError",
    "RefineRequest",
    "Refinement",
    "SearchNode",
    "SearchTree",
    "StepResult",
    "Turn",
    "as_policy",
    "best_of_n",
    "best_of_n_sync",
    "group_proposals",
    "refine",
    "refine_sync",
    "run_episode",
    "run_episode_sync",
    "select",
]
