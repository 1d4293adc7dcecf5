"""Text labels on rendered frames (time stamps, part names), shared by the Pillow and VTK
video back ends.

Labels are drawn in DejaVu Sans, which matplotlib ships and which covers Latin, Greek and
Cyrillic; sizes are in pixels of the image drawn on.
"""

from __future__ import annotations

__all__ = ["draw_label", "label_font_path"]


def label_font_path():
    """Path of DejaVu Sans (shipped with matplotlib), which covers Latin, Greek, Cyrillic."""
    from matplotlib import font_manager

    return font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans"), fallback_to_default=True)


def draw_label(image, label):
    """Write ``label`` at the top left of a Pillow image, in DejaVu Sans."""
    from PIL import ImageDraw, ImageFont

    try:
        font = ImageFont.truetype(label_font_path(), max(12, image.size[1] // 40))
    except OSError:
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((10, 8), label, fill=(40, 40, 40), font=font)
