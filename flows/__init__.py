"""Prefect flows (one file per pipeline a user runs); they only wire tasks."""
