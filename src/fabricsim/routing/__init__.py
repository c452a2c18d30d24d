"""fabricsim.routing"""
