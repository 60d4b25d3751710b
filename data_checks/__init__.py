"""Great Expectations suites for raw tables and client partitions.

* :mod:`data_checks.tables` reads the raw tables and builds the small in-memory tables the
  suites validate (one per client partition, one patient-assignment table). It does not
  import Great Expectations.
* :mod:`data_checks.suites` builds the expectation suites.
* :mod:`data_checks.validate` runs them in an ephemeral context, writes an HTML and JSON report,
  and turns failures into a :class:`~data_checks.validate.DataCheckError`.

No report ever holds a patient identifier or a row's values: map expectations report counts
only, and the patient-assignment table holds salted hashes that live only in memory.
"""

import os

# Usage analytics off before Great Expectations is first imported: a data check never calls out.
os.environ["GX_ANALYTICS_ENABLED"] = "false"
