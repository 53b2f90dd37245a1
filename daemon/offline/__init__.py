"""Offline work on recordings: training-data export and evaluation (RewardBench,
trajectory metrics). Reads the record through :mod:`webshepherd.daemon.recorder`."""
