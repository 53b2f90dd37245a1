"""webshepherd.protocol.agents — reward-guided agent helpers over the client SDK.

Best-of-n selection, feedback-driven refinement, policies and an episode loop
with the step-by-step and full-plan paradigms. No browser or model imports:
an :class:`~webshepherd.protocol.agents.environment.Environment` supplies pages.
"""

from .best_of_n import BestOfN, best_of_n, best_of_n_sync, group_proposals, select
from .chat_policy import ChatPolicy
from .environment import ActionError, ActionResult, Environment, PageState
from .loop import EpisodeResult, StepResult, run_episode, run_episode_sync
from .policy import AsyncPolicy, PolicyContext, PolicyError, RefineRequest, as_policy
from .prompts import Turn
from .refine import Refinement, refine, refine_sync

__all__ = [
    "ActionError",
    "ActionResult",
    "AsyncPolicy",
    "BestOfN",
    "ChatPolicy",
    "Environment",
    "EpisodeResult",
    "PageState",
    "PolicyContext",
    "PolicyError",
    "RefineRequest",
    "Refinement",
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
