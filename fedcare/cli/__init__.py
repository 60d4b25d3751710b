"""The ``fedcare`` command line over ``fedcare_core``."""
