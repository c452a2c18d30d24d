"""fabricsim.schedules"""
