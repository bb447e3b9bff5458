"""cgplan's compact notation for lists of sizes, shared by the text outputs and the JSON
documents that carry a sentence (diff's `size_changes`): one spelling in both."""

from __future__ import annotations


def ladder_text(sizes: tuple[int, ...] | list[int]) -> str:
    """The capture sizes, arithmetic runs of four or more written first..last/step.

    >>> ladder_text([1, 2, 4, 8, 16, 24, 32, 40, 17, 34])
    '1, 2, 4, 8..40/8, 17, 34'
    """
    out: list[str] = []
    xs = list(sizes)
    i = 0
    while i < len(xs):
        j = i + 1
        if j < len(xs):
            step = xs[j] - xs[i]
            while j + 1 < len(xs) and xs[j + 1] - xs[j] == step:
                j += 1
            if j - i + 1 >= 4 and step > 0:
                out.append(f"{xs[i]}..{xs[j]}/{step}")
                i = j + 1
                continue
        out.append(str(xs[i]))
        i += 1
    return ", ".join(out)
