"""The fixed-step CPU training the tiny vision model gets: AdamW with a linearly decaying rate
for a fixed number of steps (the same model on every machine), a progress bar on the terminal.
(The tiny judge is trained by ``webshepherd train``; the vision model's image rows need
pixel values and M-RoPE positions that its own loop passes.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from rich.progress import Progress


def progress_bar(enabled: bool, steps: int, label: str) -> Progress | None:
    """A rich progress bar over the steps (None when disabled or rich is missing)."""
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
    bar.add_task("train", total=steps, loss="-")
    return bar


def train_steps(
    model: torch.nn.Module,
    loss_of_step: Callable[[int], torch.Tensor],
    *,
    steps: int,
    peak_lr: float,
    progress: bool,
    label: str,
) -> float:
    """Train ``model`` on ``loss_of_step(step)`` (the step's loss tensor) for ``steps`` steps;
    returns the last loss. The model is left in eval mode."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, weight_decay=0.0)
    bar = progress_bar(progress, steps, label)
    loss_v = float("nan")
    model.train()
    try:
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = peak_lr * max(0.05, 1 - step / steps)
            loss = loss_of_step(step)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = loss.item()
            if bar is not None:
                bar.update(bar.task_ids[0], completed=step + 1, loss=f"{loss_v:.3f}")
    finally:
        if bar is not None:
            bar.stop()
    model.eval()
    return loss_v
