"""The per-image token cost a provider documents, for the ``budget.image_tokens`` that init writes.

``image_tokens`` is the planned cost of one image (seed 001: an unknown cost is never counted as 0),
so the value written is the most one image can cost under the provider's documented rule for the
model, after the provider's own downscaling, rounded up:

- Anthropic (``api.anthropic.com``, platform.claude.com/docs/en/build-with-claude/vision): tokens ~
  width x height / 750. Earlier models scale an image down to 1568 px on the long edge and about
  1,600 tokens (the documented largest sizes, 784 x 1568 at 1:2, come to 1,639): 1,700. The
  high-resolution models (Claude Opus 4.7 and later, Sonnet 5 and later) take up to 2576 px and
  about 3.75 megapixels (5,000 tokens): 5,100, also for a Claude model not named below.
- OpenAI (``api.openai.com``, platform.openai.com/docs/guides/images-vision, "Calculating costs",
  detail high): tile models fit the image into 2048 x 2048, scale its short side to 768 px and
  cost a base plus a price per 512 px tile, 8 tiles at most (768 x 2048): gpt-4o, gpt-4-turbo,
  gpt-4.5, o1, o3 85 + 8 x 170 = 1,445; gpt-4o-mini 2,833 + 8 x 5,667 = 48,169. Patch models
  count 32 px patches, 1,536 at most, times a multiplier: gpt-4.1 1,536 (the most of either
  rule); gpt-4.1-mini and gpt-5-mini x 1.62 = 2,489; o4-mini x 1.72 = 2,642; gpt-4.1-nano and
  gpt-5-nano x 2.46 = 3,779. Another OpenAI model: 3,779, the most of these but gpt-4o-mini's.

Any other server (llama.cpp, vLLM, a proxy) documents no per-image cost: nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

_ANTHROPIC_DOC = "Anthropic's vision guide: about width x height / 750 tokens"
_OPENAI_DOC = "OpenAI's images and vision guide, detail high"

_ANTHROPIC_STANDARD = 1700
_ANTHROPIC_HIGH = 5100
_ANTHROPIC_STANDARD_MODELS = (
    "claude-3",
    "claude-sonnet-4",
    "claude-haiku-4",
    "claude-opus-4-0",
    "claude-opus-4-1",
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-opus-4-2025",
)
"""Claude models that scale an image to 1568 px (before the high-resolution ones)."""

_OPENAI_MODELS = {
    "gpt-4o-mini": 48169,
    "gpt-4o": 1445,
    "gpt-4-turbo": 1445,
    "gpt-4.5": 1445,
    "o1": 1445,
    "o3": 1445,
    "gpt-4.1-nano": 3779,
    "gpt-4.1-mini": 2489,
    "gpt-4.1": 1536,
    "gpt-5-nano": 3779,
    "gpt-5-mini": 2489,
    "o4-mini": 2642,
}
"""The largest cost of one image per OpenAI model family (by name prefix, the longest first)."""
_OPENAI_OTHER = 3779


@dataclass(frozen=True)
class ImageCost:
    """A documented per-image token cost and where it comes from."""

    tokens: int
    source: str


def documented_image_tokens(base_url: str, model: str) -> ImageCost | None:
    """The per-image cost the provider at ``base_url`` documents for ``model``; None when it documents none."""
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return None
    if host == "api.anthropic.com":
        if model.startswith(_ANTHROPIC_STANDARD_MODELS):
            return ImageCost(_ANTHROPIC_STANDARD, f"{_ANTHROPIC_DOC}, at most 1568 px on the long edge")
        return ImageCost(_ANTHROPIC_HIGH, f"{_ANTHROPIC_DOC}, at most 2576 px and 3.75 megapixels")
    if host == "api.openai.com":
        family = max((name for name in _OPENAI_MODELS if model.startswith(name)), key=len, default=None)
        if family is None:
            return ImageCost(_OPENAI_OTHER, f"{_OPENAI_DOC}: the most any model there costs but gpt-4o-mini")
        return ImageCost(_OPENAI_MODELS[family], f"{_OPENAI_DOC}: the most one image costs on {family}")
    return None
