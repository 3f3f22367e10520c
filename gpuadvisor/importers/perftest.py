"""perftest's own error lines (ib_send_lat, ib_write_bw, ...): the port it was asked to use is not active.

perftest checks the port before a test (perftest_parameters.c, ``ctx_set_link_layer`` / ``check_link``) and, when
its state is not ACTIVE, prints ``" Port number %d state is %s\\n"`` (``portStates``: Nop, Down, Init, Armed, Active
Defer) and gives up ("Couldn't set the link layer", "Couldn't get context for the device"). That line is the port's
state as the verbs library read it; perftest does not name the device (the one given by ``-d``, else the first the
library lists), so the port is kept with its device unknown, and what perftest does not print (physical state,
rate) is unknown with that reason.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort
from gpuadvisor.importers.rdma_ports import line_ports, line_starts

LINE = re.compile(r"^\s*Port number (\d{1,3}) state is (Nop|Down|Init|Armed|Active Defer)\s*$")
_STATES = {"Nop": "NOP", "Down": "DOWN", "Init": "INIT", "Armed": "ARMED", "Active Defer": "ACTIVE_DEFER"}
DEVICE = "? (perftest does not name it)"


starts = line_starts(LINE, "perftest")  # " Port number 1 state is Down"


def _port(m: re.Match[str]) -> RdmaPort:
    """A ``Port number N state is S`` line as a port of an unnamed device in state S."""
    port = RdmaPort(device=DEVICE, port=int(m.group(1)), state=_STATES[m.group(2)])
    for name in ("phys_state", "rate_gbps", "link_layer", "firmware", "ca_type"):
        port.missing(name, "perftest's error line does not print it")
    return port


parse_perftest = line_ports(LINE, _port)
