"""One way to wait for a service's answer, sending a request that is safe to repeat again
while it is unanswered (no rclpy import: the caller's client and its way of waiting are given).

Why repeat: on a busy host Fast DDS drops the answer to a client whose response reader the
server has not matched yet (rmw_fastrtps waits 100 ms for the match, then logs "failed to send
response (timeout)"), although ``wait_for_service`` has returned. A query, a stop or a pause
is safe to send twice; a reset is not (a copy that arrives after a new stop would clear that
stop), nor is any command that starts something.
"""
from __future__ import annotations

import time

#: Seconds between the copies of a request that is safe to repeat.
RESEND_PERIOD = 1.0


def waiting_by(step):
    """A ``wait(seconds, done) -> bool`` for :func:`answer` (and any other wait for a
    condition): calls ``step()`` (spin an executor once, or sleep a little while another
    thread spins one) until ``done()`` or ``seconds`` have passed; whether ``done()`` holds.

    >>> ticks = []
    >>> wait = waiting_by(lambda: ticks.append(1))
    >>> wait(5.0, lambda: len(ticks) >= 3), len(ticks)
    (True, 3)
    >>> wait(0.0, lambda: False)
    False
    """
    def wait(seconds: float, done) -> bool:
        deadline = time.monotonic() + seconds
        while not done():
            if time.monotonic() >= deadline:
                return False
            step()
        return True
    return wait


class NoAnswer(TimeoutError):
    """A service did not answer in time (the message names it and the number of requests sent)."""


def answer(client, request, timeout: float, wait, resend_period: float | None = None):
    """The response of ``client``'s service to ``request`` (NoAnswer after ``timeout`` s).

    ``wait(seconds, done) -> bool`` lets time pass until ``done()`` or ``seconds`` (spinning an
    executor, or sleeping while another thread spins one) and says whether ``done()`` holds.
    ``resend_period``: if given, the request is repeated every that many seconds while
    unanswered (only for requests that are safe to repeat); the first answer wins.

    >>> class Instant:                      # a client whose first request is lost
    ...     srv_name, sent = "/hw/status", 0
    ...     def call_async(self, request):
    ...         self.sent += 1
    ...         return Done(self.sent > 1, request)
    >>> class Done:
    ...     def __init__(self, ok, r): self.ok, self.r = ok, r
    ...     def done(self): return self.ok
    ...     def result(self): return self.r
    >>> no_wait = lambda seconds, done: done()
    >>> answer(Instant(), "ping", 5.0, no_wait, resend_period=0.0)
    'ping'
    >>> answer(Instant(), "ping", 0.0, no_wait)
    Traceback (most recent call last):
    ...
    delta_core.ros.service_call.NoAnswer: /hw/status did not answer within 0 s (1 request sent)
    """
    futures = [client.call_async(request)]
    done = lambda: any(f.done() for f in futures)               # noqa: E731
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if done():
            return next(f for f in futures if f.done()).result()
        if left <= 0:
            n = len(futures)
            raise NoAnswer(f"{client.srv_name} did not answer within {timeout:g} s "
                           f"({n} request{'s' if n > 1 else ''} sent)")
        step = left if resend_period is None else min(left, resend_period)
        if not wait(step, done) and resend_period is not None and time.monotonic() < deadline:
            futures.append(client.call_async(request))
