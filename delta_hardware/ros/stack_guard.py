"""Two stacks in one ROS domain without namespaces would answer each other's clients (two
``/delta_hardware/status`` servers, two ``/clock`` publishers). The second one to start finds
the first on the ROS graph and refuses to start, saying which node is in the way and what to
do (a namespace, or another ``ROS_DOMAIN_ID``).

Discovery takes a moment: the graph is watched for :data:`DISCOVERY_WAIT` s before the node
opens its drives, and looked at again once its control loop has started (seconds later on a
busy host); a stack that starts within that moment of another may still miss it.
"""
from __future__ import annotations

import time

#: s the graph is watched for another stack before the drives are opened: longer than Fast DDS's
#: participant announcement period (3 s), so a node whose first announcements were missed on a
#: busy host is still seen
DISCOVERY_WAIT = 3.5
#: s more, once another publisher of the clock is seen, for its node's name (for the message)
NAME_WAIT = 3.0


def other_stack(node, owns_clock: bool, wait: float = DISCOVERY_WAIT) -> str:
    """Why ``node`` must not start ('' if nothing is in the way): another node of its name in
    its namespace, or (when it is to publish ``/clock``) another publisher of its clock topic."""
    name, ns = node.get_name(), node.get_namespace()
    fqn = node.get_fully_qualified_name()
    clock = node.resolve_topic_name("/clock")
    deadline = time.monotonic() + wait
    name_deadline = deadline + NAME_WAIT
    hint = ("start it in another namespace (delta-bringup --namespace r2, launch namespace:=r2) or another "
            "ROS_DOMAIN_ID")
    while True:
        same = [n for n in node.get_node_names_and_namespaces() if n == (name, ns)]
        if len(same) > 1:
            return f"another stack is running in this ROS domain: {fqn} already exists (its {fqn}/status is served); {hint}"
        late = time.monotonic() >= deadline
        if owns_clock:
            others = [i for i in node.get_publishers_info_by_topic(clock)
                      if (i.node_name, i.node_namespace) != (name, ns)]
            known = [i for i in others if not i.node_name.startswith("_NODE_NAME_UNKNOWN")]
            # the publishers' node names come a moment after their endpoints (later still on a busy host)
            if known or (others and time.monotonic() >= name_deadline):
                who = ", ".join(sorted({f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in known})) or \
                    "another node"
                return f"another stack is running in this ROS domain: {clock} is already published by {who}; {hint}"
        if late and not (owns_clock and others):
            return ""
        time.sleep(0.1)
