"""The Web-Shepherd engine: prompts, checklists, label positions, Eq. 2 rewards, model backends.

Entry points: :func:`webshepherd.daemon.engine.loader.load_engine` (a model folder or hub
id -> :class:`~webshepherd.daemon.engine.engine.Engine`) and
:func:`webshepherd.daemon.dev.tiny_model.ensure_tiny_model` (the tiny test model). This
package imports no torch until a backend is loaded.
"""
