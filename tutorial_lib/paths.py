"""Where the checkout keeps its data: the floor every wing may import (like `checks`)."""
from pathlib import Path

__all__ = ["CHECKOUT", "DATA_DIR", "TASKS_DIR", "RESULTS_DIR"]

#: The folder holding `tutorial_lib/` (a checkout, or site-packages for a plain install).
CHECKOUT = Path(__file__).resolve().parents[1]
DATA_DIR = CHECKOUT / "data"
TASKS_DIR = DATA_DIR / "tasks"
#: The committed results of the reruns (a sweep writes to `$TUTORIAL_LIB_RESULTS` instead when it is set).
RESULTS_DIR = DATA_DIR / "results"
