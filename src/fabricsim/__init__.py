"""fabricsim: an executable model of AI-cluster interconnects.

Layers (data flows one way; a lower layer never imports a higher one):
hardware -> topology -> routing -> schedules -> engine -> tuner / training -> reports -> cli
"""

__version__ = "0.1.0"
