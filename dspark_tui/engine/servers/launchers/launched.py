"""What every launcher's server shares: it runs on another machine (a Slurm node, a Kubernetes
pod), so this machine neither checks its port, nor pins it to CPUs, nor probes its GPUs."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.engine.servers.gpu import GpuProbe
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.engine.servers.server import Emit, ServerProcess
from dspark_tui.model import Arm, Plan


class LaunchedServer(ServerProcess):
    """A ServerProcess whose local process holds a server a launcher started elsewhere; a
    launcher sets up its own state in `_launcher_state`, once the supervisor's is set."""

    local_port = False
    pins_here = False  # the plan refuses server.cpus with a launcher (model/plan.py)

    def __init__(self, plan: Plan, arm: Arm, *, log_path: Path, run_dir: Path, emit: Emit,
                 gpu: GpuProbe | None = None, session: str | None = None,
                 placement: Placement | None = None) -> None:
        # Its GPUs are on the node or the cluster's: the local probe sees none of them.
        super().__init__(plan, arm, log_path=log_path, run_dir=run_dir, emit=emit, gpu=None,
                         session=session, placement=placement)
        self._launcher_state()

    def _launcher_state(self) -> None:
        raise NotImplementedError
