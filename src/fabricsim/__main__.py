"""`python -m fabricsim`: the same command as the `fabricsim` console script."""

from fabricsim.cli.main import run

if __name__ == "__main__":
    run()
