"""Screenshots into a Qwen2-VL-class model's inputs: image tokens, pixel values, 3D positions.

The engine renders judge prompts as text with the authors' image placeholder inside the
screenshot block. For a vision-language checkpoint that placeholder becomes what the
model's chat template writes for an image part (``<|vision_start|><|image_pad|><|vision_end|>``),
and the one ``<|image_pad|>`` is expanded to one token per merged patch, as the model's
processor does (``image_grid_thw.prod() // merge_size**2``). The pixels go through the
checkpoint's own image processor.

Positions: Qwen2-VL's M-RoPE gives image tokens (t, h, w) grid positions; text after the
image continues at ``index + delta`` (``delta`` from ``get_rope_index``) on all three axes,
so a suffix continuing a prefilled prefix with an image only needs that offset.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from webshepherd.daemon.engine.prompts import IMAGE_PLACEHOLDER, SCREENSHOT_BLOCK
from webshepherd.protocol.errors import ModelError

if TYPE_CHECKING:
    from transformers import PretrainedConfig
    from transformers.image_processing_utils import BaseImageProcessor

VISION_START, IMAGE_PAD, VISION_END = "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"
#: The most pixels a screenshot may declare to be decoded at all (8K UHD is 33.2 million; the
#: processor then scales it to its own ``max_pixels``). A checkpoint whose ``max_pixels`` is
#: larger raises the bound to that. Checked from the header, before any decoding.
MAX_DECODED_PIXELS = 40_000_000
#: The formats a screenshot may be in (the protocol's ``Screenshot.mime``).
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP")


def is_vision_config(config: PretrainedConfig) -> bool:
    """Whether a loaded ``config.json`` is a Qwen2-VL-class vision-language model."""
    return getattr(config, "vision_config", None) is not None and hasattr(config, "image_token_id")


def place_image(text: str, markup: str) -> tuple[str, bool]:
    """``text`` with the placeholder of its first screenshot block replaced by ``markup``
    (where the authors split the user message around the image); whether it had one."""
    at = text.find(SCREENSHOT_BLOCK)
    if at < 0:
        return text, False
    cut = at + len(SCREENSHOT_BLOCK) - len(IMAGE_PLACEHOLDER) - 1
    return text[:cut] + markup + text[cut + len(IMAGE_PLACEHOLDER) :], True


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """The size Qwen2-VL's image processor resizes an image to: each side rounded to a
    multiple of ``factor`` (patch x merge), the area brought within ``[min_pixels,
    max_pixels]`` keeping the aspect ratio (the arithmetic of transformers' ``smart_resize``)."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def image_token_count(
    height: int, width: int, *, patch: int = 14, merge: int = 2, min_pixels: int, max_pixels: int
) -> int:
    """Image tokens (``<|image_pad|>``) for an image of that size: one per ``merge x merge``
    patches of the resized image. A stock Qwen2.5-VL processor (patch 14, merge 2,
    min_pixels 3136, max_pixels 12845056) gives a 1280x720 screenshot 1196 tokens."""
    h, w = smart_resize(height, width, patch * merge, min_pixels, max_pixels)
    return (h // patch) * (w // patch) // merge**2


@dataclass(frozen=True)
class Image:
    """One screenshot as the model takes it."""

    pixel_values: torch.Tensor
    grid_thw: torch.Tensor  # (1, 3)
    tokens: int  # image tokens in the prompt

    @property
    def markup(self) -> str:
        return VISION_START + IMAGE_PAD * self.tokens + VISION_END


class VisionInputs:
    """A vision-language checkpoint's image processor and image token ids."""

    def __init__(self, image_processor: BaseImageProcessor, config: PretrainedConfig) -> None:
        self.image_processor = image_processor
        self.image_token_id = int(config.image_token_id)
        self.merge = int(getattr(image_processor, "merge_size", 2))
        self.patch = int(getattr(image_processor, "patch_size", 14))
        size = getattr(image_processor, "size", None) or {}
        max_pixels = getattr(image_processor, "max_pixels", None) or size.get("longest_edge")
        min_pixels = getattr(image_processor, "min_pixels", None) or size.get("shortest_edge")
        self.max_pixels = int(max_pixels or 1280 * 28 * 28)
        self.min_pixels = int(min_pixels or 56 * 56)
        # the most image tokens a screenshot can take (when its size is not known)
        self.max_tokens = self.max_pixels // (self.patch * self.merge) ** 2 + 2
        self.max_decoded_pixels = max(int(max_pixels or 0), MAX_DECODED_PIXELS)

    @classmethod
    def load(cls, model: str, config: PretrainedConfig, local_files_only: bool) -> VisionInputs:
        from transformers import AutoImageProcessor

        proc = AutoImageProcessor.from_pretrained(model, local_files_only=local_files_only)
        return cls(proc, config)

    def tokens_for(self, mime_and_bytes: tuple[str, bytes]) -> int | None:
        """The image tokens this screenshot will take (from its header's size, nothing
        decoded), or None when it is no image this judge reads."""
        from PIL import Image as PILImage

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
                with PILImage.open(io.BytesIO(mime_and_bytes[1]), formats=IMAGE_FORMATS) as im:
                    width, height = im.size
        except Exception:
            return None
        if width * height > self.max_decoded_pixels or min(width, height) < 1:
            return None
        return image_token_count(
            height,
            width,
            patch=self.patch,
            merge=self.merge,
            min_pixels=self.min_pixels,
            max_pixels=self.max_pixels,
        )

    def image(self, mime_and_bytes: tuple[str, bytes], dtype: torch.dtype) -> Image:
        """A screenshot (``(mime, bytes)``) through the image processor. Its size is read
        from the header first: above :attr:`max_decoded_pixels` it is refused undecoded."""
        from PIL import Image as PILImage

        mime, data = mime_and_bytes
        try:
            with warnings.catch_warnings():  # PIL's own bomb warning: the check below says it
                warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
                header = PILImage.open(io.BytesIO(data), formats=IMAGE_FORMATS)  # the header
        except PILImage.DecompressionBombError as e:
            raise ModelError(
                f"the screenshot ({mime}, {len(data)} bytes) declares more pixels than the "
                f"judge decodes ({type(e).__name__}); send a smaller one"
            ) from e
        except Exception as e:
            raise ModelError(
                f"the screenshot ({mime}, {len(data)} bytes) "
                f"is not an image the model can read ({type(e).__name__})"
            ) from e
        width, height = header.size
        if width * height > self.max_decoded_pixels:
            header.close()
            raise ModelError(
                f"the screenshot ({mime}, {len(data)} bytes) declares {width}x{height} pixels, "
                f"more than the judge decodes ({self.max_decoded_pixels:,}); send a smaller one"
            )
        try:
            with header:
                pic = header.convert("RGB")
        except Exception as e:
            raise ModelError(
                f"the screenshot ({mime}, {len(data)} bytes) "
                f"is not an image the model can read ({type(e).__name__})"
            ) from e
        out = self.image_processor(images=[pic], return_tensors="pt")
        grid = out["image_grid_thw"]
        return Image(
            pixel_values=out["pixel_values"].to(dtype),
            grid_thw=grid,
            tokens=int(grid[0].prod()) // self.merge**2,
        )

    def positions(self, model: Any, ids: list[int], image: Image) -> tuple[torch.Tensor, int]:
        """3D M-RoPE positions ``(3, 1, len(ids))`` of a prompt holding ``image``, and the
        offset of the text after it (its position = index + offset)."""
        dev = next(model.parameters()).device
        t = torch.tensor([ids], device=dev)
        pos, delta = model.model.get_rope_index(
            t,
            mm_token_type_ids=(t == self.image_token_id).int(),
            image_grid_thw=image.grid_thw.to(dev),
        )
        return pos, int(delta.reshape(-1)[0])
