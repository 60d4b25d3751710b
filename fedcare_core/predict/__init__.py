"""What a client deploys.

What a client deploys: one predictor over its encoded features whatever the method
(:mod:`.predictors`), and the model package that scores raw rows (:mod:`.package`).
"""
