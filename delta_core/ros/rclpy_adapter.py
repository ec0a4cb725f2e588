"""The four hooks rclpy (Jazzy) lacks, in one place; every private rclpy name the stack uses is here.

1. **When a service request was received.** A latched stop must void the requests queued
   before it (a reset sent before an emergency stop must not undo it), so the hardware node
   needs each request's reception time. The middleware stamps it (``rmw_service_info_t``:
   ``received_timestamp``), rclpy's executor takes it with the request and then drops it:
   service callbacks get ``(request, response)`` only. :class:`StampedExecutor` overrides the
   executor's private ``_take_service`` to keep the stamp, and :func:`request_received_ns`
   gives it to the callback (subscriptions need nothing of this: rclpy passes their
   ``MessageInfo`` to a callback that takes two arguments).
2. **A lifecycle transition that is not allowed from the current state.** rclpy's
   ``change_state`` service raises ``RCLError`` out of the executor (the node dies) where
   rclcpp answers ``success: false``. :func:`refuse_disallowed_transitions` wraps that
   service's callback (a public attribute) and answers the refusal; :func:`lifecycle_state`
   reads the current state through the ``get_state`` service's callback.
3. **Waiting for an executor's callbacks before it is shut down.** rclpy 7.1.6's
   ``Executor.shutdown`` does not wait for the callbacks a multi-threaded executor still runs
   or has queued (it tests the flag it has just set) and destroys the guard condition each of
   them triggers when it ends: rclpy then prints "The following exception was never retrieved"
   at exit. :func:`settle` waits for them on the executor's private thread pool (``_executor``).
4. **Simulated time without a /clock subscription per node of the process.** With
   ``use_sim_time`` every rclpy node subscribes ``/clock`` and pays an executor wake-up (about
   1 ms of CPU, more on a multi-threaded executor) per message. rclpy's ``TimeSource`` (the
   node's private ``_time_source``) can drive other clocks (``attach_clock``) and be fed
   directly (``clock_callback``): :func:`share_time` drives a companion node's clock from its
   owner's, :func:`feed_own_time` lets the node that publishes ``/clock`` set its own time
   where it publishes it, instead of receiving its own message back.
"""
from __future__ import annotations

import threading
import time

from lifecycle_msgs.srv import ChangeState, GetState
from rclpy._rclpy_pybind11 import RCLError          # rclpy's C-layer error (also for the nodes)
from rclpy.exceptions import InvalidHandle
from rclpy.executors import MultiThreadedExecutor, await_or_execute
from rclpy.lifecycle import TransitionCallbackReturn

_current = threading.local()


def request_received_ns() -> int:
    """In a service callback run by :class:`StampedExecutor`: ``time.time_ns()`` when the
    middleware received the request (elsewhere: now)."""
    return getattr(_current, "ns", None) or time.time_ns()


class StampedExecutor(MultiThreadedExecutor):
    """A multi-threaded executor whose service callbacks can ask when their request was
    received (:func:`request_received_ns`; module docstring, 1)."""

    def _take_service(self, srv):
        try:
            with srv.handle:
                request, header = srv.handle.service_take_request(srv.srv_type.Request)
        except InvalidHandle:                 # destroyed meanwhile (shutdown): nothing to do
            return None
        if header is None:
            return None
        stamp = int(getattr(header, "received_timestamp", 0) or getattr(header, "source_timestamp", 0) or 0)

        async def _execute():
            _current.ns = stamp or time.time_ns()
            try:
                response = await await_or_execute(srv.callback, request, srv.srv_type.Response())
            finally:
                _current.ns = None
            try:
                srv.send_response(response, header)
            except InvalidHandle:             # the service went while the callback ran (shutdown)
                pass
        return _execute


def _service(node, srv_type, suffix: str):
    for srv in node.services:
        if srv.srv_type is srv_type and srv.srv_name.endswith(suffix):
            return srv
    raise LookupError(f"{node.get_name()} has no {suffix} service")


def lifecycle_state(node) -> str:
    """The lifecycle state's label (``unconfigured``, ``inactive``, ``active``, ...)."""
    srv = _service(node, GetState, "/get_state")
    return srv.callback(GetState.Request(), GetState.Response()).current_state.label


def refuse_disallowed_transitions(node, on_refused) -> None:
    """Answer a ``change_state`` request for a transition the current state does not allow
    with ``success: false`` (and ``on_refused(text)``) instead of letting rclpy raise."""
    srv = _service(node, ChangeState, "/change_state")
    inner = srv.callback

    def callback(request, response):
        before = lifecycle_state(node)
        try:
            return inner(request, response)
        except RCLError as e:
            on_refused(f"lifecycle transition {request.transition.label or request.transition.id} not allowed "
                       f"from {before} ({str(e).splitlines()[0]}); still {before}")
            response.success = False
            return response
    srv.callback = callback


def trigger(transition) -> bool:
    """Run one of the node's own transitions (``node.trigger_configure`` ...): whether it
    succeeded (False, nothing raised, if the current state does not allow it)."""
    try:
        return transition() == TransitionCallbackReturn.SUCCESS
    except RCLError:
        return False


def share_time(owner, clock) -> None:
    """Drive ``clock`` (a ``ROS_TIME`` clock of another node in this process, made with
    ``use_sim_time`` false) from ``owner``'s time source: simulated time whenever ``owner``
    uses it, with no ``/clock`` subscription of its own (module docstring, 4)."""
    owner._time_source.attach_clock(clock)


def feed_own_time(node):
    """For the node that publishes ``/clock``: drop its own ``/clock`` subscription (also when
    ``use_sim_time`` is set later) and return ``feed(msg)``, which sets the time of the node and
    of every clock shared with it (:func:`share_time`) to a ``rosgraph_msgs/Clock`` message,
    to be called with each message it publishes (module docstring, 4)."""
    source = node._time_source
    source._subscribe_to_clock_topic = lambda: None
    if source._clock_sub is not None:
        node.destroy_subscription(source._clock_sub)
        source._clock_sub = None
    return source.clock_callback


def settle(executor, timeout: float) -> None:
    """Let the callbacks a multi-threaded ``executor`` still has once its spin has ended (running,
    or queued in its thread pool) end, for up to ``timeout`` s, before it is shut down and the node
    destroyed (module docstring, 3). A no-op for an executor without a thread pool."""
    pool = getattr(executor, "_executor", None)
    if pool is None:
        return
    waiter = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, name="settle", daemon=True)
    waiter.start()
    waiter.join(timeout)
