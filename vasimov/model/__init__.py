"""The Asimov 1 robot description, generated from the fact sheet: MJCF for MuJoCo, URDF for RViz/Foxglove."""

from vasimov.model.mjcf import build_mjcf, load_model

__all__ = ["build_mjcf", "load_model"]
