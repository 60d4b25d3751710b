"""Thin Prefect tasks over ``fedcare_core``."""
