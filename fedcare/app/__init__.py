"""Application services: what every front end calls to do its work.

The CLI, the Prefect flows, the Dask grids and the site commands are thin adapters over them.

- :mod:`fedcare.app.run`: one run, request → checks → prepared federation → result → sinks.
"""
