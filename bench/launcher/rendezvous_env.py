"""The variables a launcher or the operator sets for a rank to find its peers. bench/launcher's
benchmarks clear them from their own environment, so that a shell of a job's pod (or an earlier
run) does not steer the launchers they measure."""

RENDEZVOUS_VARS = ("PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR",
                   "PET_MASTER_PORT", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


def clear_rendezvous_vars(env):
    """Removes RENDEZVOUS_VARS from the mapping `env` (os.environ or a copy of it)."""
    for var in RENDEZVOUS_VARS:
        env.pop(var, None)
