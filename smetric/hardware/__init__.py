"""Hardware: GPU specs, LLM configs, and the calibrated iteration-time PerfModel (with a numba form)."""

from .efficiency import Efficiency
from .gpus import GPUSpec, get_gpu, gpu_names
from .models import ModelSpec, get_model, model_names
from .perfmodel import ContextRangeWarning, PerfModel

__all__ = ["ContextRangeWarning", "Efficiency", "GPUSpec", "ModelSpec", "PerfModel",
           "get_gpu", "get_model", "gpu_names", "model_names"]
