"""The test suites. Their helper modules assert too: pytest explains those failures as well."""

import pytest

pytest.register_assert_rewrite("tests.support", "tests.processes", "tests.e2e.helpers")
