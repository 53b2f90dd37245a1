"""Live webshepherd rewards inside the agent frameworks people already use.

- :mod:`.browsergym`: ``ProcessRewardWrapper``, a ``gymnasium.Wrapper`` for BrowserGym envs.
- :mod:`.browser_use`: ``attach(agent, ...)``, browser-use's step and done hooks.
- :mod:`.agentlab`: ``RewardGuidedAgentArgs``, best-of-n (or refinement) around any AgentLab agent.
- :mod:`.replay` and :mod:`.blame`: replay a recorded BrowserGym run; prove its first bad step.

Each module imports its framework lazily, so ``import webshepherd.integrations`` needs none of
them; install them with ``pip install '.[integrations]'`` in a clone.
"""
