"""Evaluations: the WebRewardBench harness and the planning-framework trajectory metrics."""
