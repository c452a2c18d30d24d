"""fabricsim.hardware"""
