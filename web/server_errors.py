"""waitress's own refusals as problem documents, like every other answer of the API.

waitress answers some requests before the app sees them: a body over the limit (413, refused
from its `Content-Length` before it is buffered) and a request it cannot parse (400). Its own
answer to those is `text/plain`; these classes make it the problem document the API promises.
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import quote

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, MultiSocketServer
from waitress.task import ErrorTask

from web.problems import PATH_SAFE, code_of_status, document

TOO_LARGE = "the body is larger than 1 MiB; nothing was read or done"
# Not waitress's own text, which quotes the offending request line (a header's value, perhaps a
# token): the answer repeats nothing of the request.
MALFORMED = "the request is not well-formed HTTP/1.1 ({reason}); nothing was done"


class ProblemErrorTask(ErrorTask):  # type: ignore[misc]  # waitress has no types
    """waitress's error answer, as `application/problem+json` with a request id of its own."""

    def execute(self) -> None:
        error = self.request.error
        request_id = uuid.uuid4().hex
        path = getattr(self.request, "path", None)  # unset when the request line was not read
        instance = quote(path or "/", safe=PATH_SAFE)
        detail = TOO_LARGE if error.code == 413 else MALFORMED.format(reason=error.reason)
        body = json.dumps(document(code_of_status(error.code), detail, instance, request_id))
        data = body.encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.extend(
            [
                ("Content-Type", "application/problem+json"),
                ("Content-Language", "en"),  # refused before its language was read: English
                ("Vary", "Accept-Language"),
                ("X-Request-ID", request_id),
            ]
        )
        self.set_close_on_finish()
        self.content_length = len(data)
        self.write(data)


class ProblemChannel(HTTPChannel):  # type: ignore[misc]
    error_task_class = ProblemErrorTask


def listening_servers(server: Any) -> list[Any]:
    """Each listening server of `server`, as `waitress.create_server` returns it."""
    if isinstance(server, MultiSocketServer):
        return [s for s in server.map.values() if isinstance(s, BaseWSGIServer)]
    return [server]
