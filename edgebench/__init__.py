"""edgebench: fair, scripted comparisons of on-device inference frameworks."""

__version__ = "0.1.0"
