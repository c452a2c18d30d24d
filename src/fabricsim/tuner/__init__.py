"""fabricsim.tuner"""
