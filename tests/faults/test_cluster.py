"""A floor that survives losing a broker: the pipeline on a three-node cluster of its own (every
topic replicated three times, min.insync.replicas=2), the node leading most of the busy partitions
killed with SIGKILL while the workers settle a backlog. Checked as the single-broker fault
scenarios are: the settlements equal `craps-streams replay` of the same input wager by wager, none
lost, none twice, table states equal the replay's, the money equals the workers' /metrics. The time
from the kill to the next settlement read is printed. The other cluster drills (the controller
killed, a rolling restart, a node cut off, a full disk) are `make faults`: tests/faults/drills.py."""
from __future__ import annotations

import pytest

from tests.faults import cluster_scenarios
from tests.faults.harness import format_table, log

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_killing_the_busiest_leader_loses_and_repeats_nothing(tmp_path):
    v = cluster_scenarios.leader_kill(tmp_path, cluster_scenarios.Size())
    log("\n" + format_table([v]))
    log(f"cluster leader kill: next settlement {v.next_settlement_s:.2f} s, every partition settling again "
        f"{v.every_partition_s:.2f} s after the kill")
    assert v.exactly_once, v.explain()
    assert v.money_ok, v.explain_money()
    assert not any("exited" in n for n in v.notes), v.explain()
    # The killed node led partitions; afterwards the two others lead them all.
    assert v.killed_node not in v.leaders_after, v.explain()
    assert sum(v.leaders_after.values()) == 3 * 8, v.explain()
