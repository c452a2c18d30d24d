"""fabricsim.validation: predictions checked against real published measurements."""
