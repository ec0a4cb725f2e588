"""The bus receiver's watch: python-can reads the bus in one thread (``can.Notifier``), and
when that thread stops, nothing of the drives comes in any more: no TPDO, no heartbeat, no
EMCY, no SDO answer. It stops for good at the first exception of the interface's ``recv``
unless a listener handles it: on ``udp_multicast``, one datagram on the port that is not a
python-can frame ("could not unpack received message", e.g. a DDS packet of another program
that uses the port).

:class:`ReceiverWatch` is a listener on the network that handles those errors, so the
thread goes on, and records each one; the backend asks :meth:`ReceiverWatch.check` once per
control cycle and treats a receive error, or a receive thread that is no longer alive, as a
fault of every axis (the frames of that moment may be lost, or the port is shared with
another program). :meth:`ReceiverWatch.restart` starts a new receive thread after one died,
so that the drives can still be stopped and disabled with their answers confirmed.
"""
from __future__ import annotations

import threading
import time

import can


class ReceiverWatch(can.Listener):
    """Counts the receive errors of a ``canopen.Network``'s notifier and watches its thread.

    :meth:`attach` before ``network.connect()``, :meth:`connected` after it."""

    def __init__(self, where: str):
        self.where = where
        self.errors = 0                      # receive errors handled (the thread went on)
        self.last_error = ""
        self.last_error_time = None
        self.restarts = 0
        self._reported = 0                   # errors already turned into a fault
        self._thread = None
        self._network = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ can.Listener
    def on_message_received(self, msg) -> None:
        """Nothing: the listener is there for :meth:`on_error` only."""
        pass

    def on_error(self, exc: Exception) -> None:
        """Called in the receive thread for an exception of ``recv``; returning (not raising)
        tells python-can it was handled: the thread goes on."""
        cause = exc.__cause__ or exc.__context__
        text = str(exc) + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
        with self._lock:
            self.errors += 1
            self.last_error = text
            self.last_error_time = time.monotonic()
        # python-can keeps the exception on the notifier even when handled, and canopen's
        # send_message raises it from then on (Network.check): every SYNC, RPDO and SDO would
        # fail. Handled, it is forgotten; the backend faults on the count instead.
        self.clear_exception(self._network)

    def stop(self) -> None:
        """Nothing to release."""
        pass

    # ------------------------------------------------------------------ the network
    def attach(self, network) -> None:
        """Listen to ``network``'s notifier (call before ``network.connect()``)."""
        network.listeners.append(self)
        self._network = network

    def connected(self, threads_before) -> None:
        """Remember the receive thread the notifier just started (the thread that was not
        there before; ``threads_before``: ``threading.enumerate()`` before ``connect()``;
        python-can names it ``Notifier for bus ...``)."""
        new = [t for t in threading.enumerate() if t not in threads_before]
        new.sort(key=lambda t: "otifier" not in t.name)
        self._thread = new[0] if new else None

    @property
    def alive(self) -> bool:
        """Whether the receive thread runs (its notifier not stopped, its thread alive)."""
        notifier = self._network.notifier if self._network is not None else None
        if notifier is not None and notifier.stopped:
            return False
        return self._thread is None or self._thread.is_alive()

    def check(self) -> str | None:
        """A fault text if a receive error came since the last check, or the receive thread
        is no longer alive; None if the receiver is well."""
        with self._lock:
            new = self.errors - self._reported
            self._reported = self.errors
            last = self.last_error.split(" (")[0]
        if not self.alive:
            return f"the CAN receiver on {self.where} stopped: nothing from the drives comes in"
        if new:
            hint = (": a datagram that is not a CAN frame reached the udp_multicast port (another program "
                    "sends to it; give the bus a port of its own)" if "unpack" in last else "")
            return (f"the CAN receiver on {self.where} hit {new} receive error{'s' if new > 1 else ''} "
                    f"({last}){hint}; frames may have been lost")
        return None

    def restart(self, network) -> bool:
        """A new receive thread for ``network`` if the old one is dead; True if restarted."""
        if self.alive:
            return False
        old = network.notifier
        if old is not None:
            try:
                old.stop(0.1)
            except Exception:             # a notifier that died may fail to stop cleanly: replaced anyway
                pass
        before = set(threading.enumerate())
        network.notifier = can.Notifier(network.bus, network.listeners, network.NOTIFIER_CYCLE)
        self.connected(before)
        self.restarts += 1
        return True

    def clear_exception(self, network) -> None:
        """Forget the exception python-can keeps of handled errors, so that ``network.check()``
        (called by every ``send_message`` and by ``disconnect()``) does not report a receiver
        that is running as stopped."""
        if network is not None and network.notifier is not None and self.alive:
            network.notifier.exception = None
