"""Turning what the project records into a better judge: ground-truth targets, training rows,
and ``webshepherd train`` (supervised fine-tuning with TRL)."""
