"""webshepherd.protocol.agents — reward-guided agent helpers over the client SDK.

Best-of-n selection, feedback-driven refinement, policies and an episode loop
with the step-by-step and full-plan paradigms. No browser or model imports:
an :class:`~webshepherd.protocol.agents.environment.Environment` supplies pages.
"""

from .environment import ActionError, ActionResult, Environment, PageState

__all__ = ["ActionError", "ActionResult", "Environment", "PageState"]
