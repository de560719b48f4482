"""JupyterHub with Lily: one person, one single-user server, Lily kernels in it
(docs/deploy.md says why each line is here). tests/hub loads this very file and
changes only who people are, where homes, ports and the hub's own files are, and the
timeouts (a loaded test machine).

Run with `jupyterhub -f jupyterhub_config.py` from the environment that has
`jupyterhub`, `configurable-http-proxy` and `lily-kernel[lab]` installed; the model
settings come from the hub's own environment (LILY_MODEL, LILY_API_BASE) or are edited
below.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (given by JupyterHub when it reads this file)

# --- Who people are and where their servers run: the hub's choice, not Lily's. ----------
# One system account per person (PAM), one process per person on this machine. Any
# authenticator works; a spawner that isolates people (SystemdSpawner, DockerSpawner,
# KubeSpawner) enforces the memory and CPU limits below.
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.allowed_groups = {"jupyterhub-users"}  # who may log in (none by default)
c.JupyterHub.spawner_class = "localprocess"
c.JupyterHub.bind_url = "http://127.0.0.1:8000"  # behind your TLS reverse proxy

# The single-user server, its kernels and the proxy from this environment, where Lily is
# installed (its kernelspec is in this environment's share/jupyter/kernels/lily).
BIN = Path(sys.executable).parent
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]
c.Spawner.default_url = "/lab"

# --- The model and its key, for every kernel of every person. -----------------------------
# Kernels inherit the single-user server's environment, which the spawner builds: only
# `Spawner.environment` and the variables in `Spawner.env_keep` (PATH, LANG, …) reach it,
# never the rest of the hub's environment. Unset: the embedded model (no key, no network).
MODEL = os.environ.get("LILY_MODEL", "")  # e.g. "openai/gpt-4o-mini"
API_BASE = os.environ.get("LILY_API_BASE", "")  # an OpenAI-style server of your own
KEY_VARIABLE = "OPENAI_API_KEY"  # the provider's usual variable (litellm reads it)
# Each person's own key in <KEYS>/<name> (a folder only the hub's account reads), else
# the hub's shared key, else none.
KEYS = Path(os.environ.get("LILY_HUB_KEYS", "/etc/jupyterhub/lily-keys"))


def model_key(spawner) -> str:
    """The key for this person's kernels: called by the hub at each spawn."""
    try:
        return (KEYS / Path(spawner.user.name).name).read_text(encoding="utf-8").strip()
    except OSError:
        return os.environ.get(KEY_VARIABLE, "")


c.Spawner.environment = {
    KEY_VARIABLE: model_key,
    # Limits per person, for each code run (the sandboxed Python kernel and its
    # children, docs/execution.md): a workspace's lily.yaml may lower it, never raise it.
    "LILY_MEMORY_LIMIT_MB": "2048",
    **({"LILY_MODEL": MODEL} if MODEL else {}),
    **({"LILY_API_BASE": API_BASE} if API_BASE else {}),
}

# --- Limits per person. -------------------------------------------------------------------
# The whole server: enforced by spawners that can (Systemd, Docker, Kubernetes); the
# local process spawner only passes them on as MEM_LIMIT and CPU_LIMIT.
c.Spawner.mem_limit = "4G"
c.Spawner.cpu_limit = 2.0
# Each open notebook is a kernel (a Lily kernel, and its Python kernel once code ran):
# a kernel idle for an hour is shut down, and with it its Python kernel.
c.Spawner.args = [
    "--MappingKernelManager.cull_idle_timeout=3600",
    "--MappingKernelManager.cull_interval=300",
]
