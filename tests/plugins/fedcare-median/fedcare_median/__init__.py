"""FedMedian, an outside FedCARE method (the example of ``docs/EXTENDING.md``)."""
