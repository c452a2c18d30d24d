"""fabricsim.training"""
