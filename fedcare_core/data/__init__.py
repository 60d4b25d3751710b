"""Clinical cohorts, feature partitions, client assignment, splits and preprocessing."""
