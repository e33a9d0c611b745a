"""A reason in the viewer's language, made from its code and the values it names; a reason
recorded before they were kept keeps the words it was recorded with."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask_babel import force_locale

from domain.jobs import JOB_MESSAGES, job_failed
from domain.launch import ATTEMPT_MESSAGES, LaunchProblem
from web.console.reason_words import reason_words

CHINESE = re.compile(r"[\u4e00-\u9fff]")
NAMED = re.compile(r"\{(\w+)\}")


@pytest.mark.parametrize("code", sorted(ATTEMPT_MESSAGES))
def test_every_launch_failure_reads_in_chinese_naming_its_subject(app: Flask, code: str) -> None:
    named = "{subject}" in ATTEMPT_MESSAGES[code]
    failure = LaunchProblem(code, "ann" if named else "").failure()
    with app.test_request_context(), force_locale("zh"):
        words = reason_words(failure.code, failure.params, str(failure))
    assert CHINESE.search(words), words
    assert ("ann" in words) == named


@pytest.mark.parametrize("code", sorted(JOB_MESSAGES))
def test_every_job_failure_reads_in_chinese_with_the_values_it_names(app: Flask, code: str) -> None:
    values = dict.fromkeys(NAMED.findall(JOB_MESSAGES[code]), "V42")
    failure = job_failed(code, **values)
    with app.test_request_context(), force_locale("zh"):
        words = reason_words(failure.code, failure.params, str(failure))
    assert CHINESE.search(words), words
    assert ("V42" in words) == bool(values)


def test_an_interruption_reads_in_chinese_and_an_older_failure_in_its_recorded_words(
    app: Flask,
) -> None:
    with app.test_request_context(), force_locale("zh"):
        interrupted = reason_words("INTERRUPTED", {}, "the worker's lease ran out")
        older = reason_words("INITIATOR_INACTIVE", None, "initiator ann is inactive")
    recorded = '<span class="as-recorded" lang="en">initiator ann is inactive</span>（原文）'
    assert (interrupted, older) == ("执行进程的租约已过期", recorded)
