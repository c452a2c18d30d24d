"""fabricsim.reports"""
