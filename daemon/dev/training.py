"""The brief CPU training both tiny dev models get: AdamW with a linearly decaying rate, until
both a time budget and a minimum number of steps are reached (a busy CPU still gets a usable
model), or at a cap of several budgets whatever happens; a progress bar on the terminal."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def progress_bar(enabled: bool, seconds: float, label: str = "building tiny model") -> Any:
    """A rich progress bar over the time budget (None when disabled or rich is missing)."""
    if not enabled:
        return None
    try:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:
        return None
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TimeRemainingColumn(),
        transient=True,
    )
    bar.start()
    bar.add_task("train", total=seconds, loss="-")
    return bar


def train_briefly(
    model: Any,
    loss_of_step: Callable[[int], Any],
    *,
    seconds: float,
    min_steps: int,
    peak_lr: float,
    cap: float,
    started: float,
    progress: bool,
    label: str,
) -> tuple[int, float]:
    """Train ``model`` on ``loss_of_step(step)`` (the step's loss tensor) until ``seconds``
    since ``started`` and ``min_steps`` are both reached, or ``cap`` × ``seconds``; returns the
    steps taken and the last loss. The model is left in eval mode."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, weight_decay=0.0)
    bar = progress_bar(progress, seconds, label)
    step, loss_v = 0, float("nan")
    model.train()
    try:
        while True:
            elapsed = time.monotonic() - started
            done = min(elapsed / seconds, step / min_steps)
            if done >= 1 or elapsed >= cap * seconds:
                break
            for group in opt.param_groups:
                group["lr"] = peak_lr * max(0.05, 1 - done)
            loss = loss_of_step(step)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step, loss_v = step + 1, loss.item()
            if bar is not None:
                bar.update(
                    bar.task_ids[0], completed=min(seconds, done * seconds), loss=f"{loss_v:.3f}"
                )
    finally:
        if bar is not None:
            bar.stop()
    model.eval()
    return step, loss_v
