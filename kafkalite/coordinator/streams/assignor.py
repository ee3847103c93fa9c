"""A sticky task assignor in the manner of Kafka's ``StickyTaskAssignor`` (streams groups): active tasks stay
with their previous owner while it is under its fair share, the rest go to the least loaded member (members
of a less loaded process first); then each task gets up to ``num_standby`` standby replicas on other
processes than its active one, previous standby owners first."""
from __future__ import annotations

import math

from kafkalite.coordinator.streams.model import StreamsMember, Tasks


def assign(members: dict[str, StreamsMember], tasks: dict[str, int], num_standby: int,
           previous: dict[str, Tasks]) -> dict[str, Tasks]:
    ids = sorted(members)
    out = {m: Tasks() for m in ids}
    if not ids:
        return out
    # partition-major order: a member's share spreads over the subtopologies (0_0, 1_0 | 0_1, 1_1), as Kafka's
    # sticky assignor spreads them
    all_tasks = sorted(((s, p) for s in tasks for p in range(tasks[s])), key=lambda t: (t[1], t[0]))
    quota = math.ceil(len(all_tasks) / len(ids)) if all_tasks else 0
    load = dict.fromkeys(ids, 0)
    proc = {m: members[m].process_id for m in ids}
    proc_load: dict[str, int] = {}
    active_owner: dict[tuple[str, int], str] = {}

    def give(m: str, t: tuple[str, int]) -> None:
        out[m].active.setdefault(t[0], set()).add(t[1])
        load[m] += 1
        proc_load[proc[m]] = proc_load.get(proc[m], 0) + 1
        active_owner[t] = m

    prev_owner = {(s, p): m for m, ts in previous.items() if m in out for s, ps in ts.active.items() for p in ps}
    rest = []
    for t in all_tasks:
        m = prev_owner.get(t)
        if m is not None and load[m] < quota:
            give(m, t)
        else:
            rest.append(t)
    for t in rest:
        m = min(ids, key=lambda x: (load[x], proc_load.get(proc[x], 0), x))
        give(m, t)

    if num_standby > 0:
        sload = dict.fromkeys(ids, 0)
        prev_standby = {(s, p, m) for m, ts in previous.items() for s, ps in ts.standby.items() for p in ps}
        for t in all_tasks:
            used = {proc[active_owner[t]]}
            for _ in range(num_standby):
                cands = [m for m in ids if proc[m] not in used]
                if not cands:
                    break
                m = min(cands, key=lambda x: ((t[0], t[1], x) not in prev_standby, sload[x] + load[x], x))
                out[m].standby.setdefault(t[0], set()).add(t[1])
                sload[m] += 1
                used.add(proc[m])
    return out
