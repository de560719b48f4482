"""What a session is built from, for one workspace: config, roots, tools, policy, its model
(`Workspace`, an immutable value; read again from disk in one place, `reread`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.commands import CommandTable, default_commands
from lily_kernel.config import (
    CONFIG_FILE,
    LOCAL_MODEL,
    LilyConfig,
    ModelConfig,
    load_config,
    read_config_file,
)
from lily_kernel.errors import ConfigError
from lily_kernel.llm.local_files import find_embedded_model
from lily_kernel.mcp_tools.servers import McpServer, configured_servers
from lily_kernel.persona import Persona, PersonaRoots, list_agents, load_persona
from lily_kernel.session import Session
from lily_kernel.skills import (
    ARRIVING_SOURCES,
    Host,
    LoadRules,
    SkillIndex,
    SkillRoot,
    SkillSnapshot,
    bundled_dir,
    lily_home,
    load_snapshot,
    resolve_skill_roots,
)
from lily_kernel.skills.digest import DIGEST_CACHE_FILE, DigestCache
from lily_kernel.skills.vectors import SkillVectors
from lily_kernel.tools import ToolContext, ToolPolicy, ToolRegistry, default_registry
from lily_kernel.tools.policy import configured_policy
from lily_kernel.trust import (
    PERSONA_FOLDER,
    TRUST_FILE,
    TrustState,
    TrustStore,
    WorkspaceTrust,
    hold_untrusted,
    trusted_by_environment,
    untrusted_folder_policy,
    untrusted_policy,
    untrusted_settings,
)

if TYPE_CHECKING:  # a run's settings load with the first run
    from lily_kernel.execution.limits import RunSettings

__all__ = ["Workspace", "served_folder"]

def served_folder(environ: Mapping[str, str]) -> Path | None:
    """The folder the Jupyter server that started this kernel serves (its `root_dir`,
    from `jpserver-<pid>.json` in Jupyter's runtime folder, the pid this process's
    parent's): where a notebook's project ends outside a repository (skills/roots.py).
    None where no server started it (a terminal, nbclient: no `JPY_SESSION_NAME`), or
    its file says nothing usable. The notebook's path alone cannot tell: jupyter_server 2
    gives it in full, and the kernel's folder is the notebook's."""
    if not environ.get("JPY_SESSION_NAME"):
        return None
    import json

    from jupyter_core.paths import jupyter_runtime_dir  # loaded with the kernel already

    try:
        info = Path(jupyter_runtime_dir()) / f"jpserver-{os.getppid()}.json"
        root = json.loads(info.read_text(encoding="utf-8")).get("root_dir")
    except (OSError, ValueError, AttributeError):
        return None
    path = Path(root).expanduser() if isinstance(root, str) and root else None
    return path.resolve() if path is not None and path.is_absolute() else None


def _person_home(environ: Mapping[str, str] | None) -> Path | None:
    """The home folder of the environment given (its HOME), else the process's."""
    home = environ.get("HOME") if environ is not None else None
    return Path(home) if home else None


@dataclass(frozen=True)
class Workspace:
    """The resolved setup of one workspace; loaders for snapshots and personas. Never
    changed: a session takes up a new one (trust given, MCP tools joined the registry)
    made by `reread`, and its services read their settings from the one in force."""

    workspace: Path
    config: LilyConfig
    registry: ToolRegistry
    commands: CommandTable
    policy: ToolPolicy
    skill_roots: tuple[SkillRoot, ...]
    persona_roots: PersonaRoots
    host: Host
    trust: TrustState
    # The MCP servers the session may use: the person's, and the workspace's once trusted.
    mcp_servers: tuple[McpServer, ...] = ()

    @classmethod
    def load(
        cls,
        workspace: Path,
        environ: Mapping[str, str] | None = None,
        registry: ToolRegistry | None = None,
        host: Host | None = None,
        trust_store: TrustStore | None = None,
        commands: CommandTable | None = None,
    ) -> Workspace:
        """Read config (raises ConfigError) and resolve every root. An untrusted
        lily.yaml widens nothing (trust/settings.py); `trust_store` is the person's
        (`<Lily home>/trust.json`) unless given (replay's lives in memory)."""
        workspace = workspace.resolve()
        file = read_config_file(workspace)  # read once: parsed and digested as one
        config = load_config(workspace, environ, file=file)
        base = load_config(workspace, environ, read_file=False)
        home = _person_home(environ)
        # Where trust is kept: never a place the workspace's own lily.yaml names.
        store = trust_store or TrustStore(lily_home(base) / TRUST_FILE)
        own = tuple(r.path for r in resolve_skill_roots(base, workspace, home)
                    if r.source not in ARRIVING_SOURCES)  # the person's own hold no arrival
        host_environ = environ if environ is not None else os.environ
        served = served_folder(host_environ)
        trust = TrustState(workspace, store, trusted_by_environment(host_environ),
                           person_roots=own,
                           digests=DigestCache(lily_home(base) / "cache" / DIGEST_CACHE_FILE),
                           config_digest=file.digest)
        registry = registry if registry is not None else default_registry()
        commands = commands if commands is not None else default_commands()
        person = lily_home(base)
        named = frozenset(s.name for s in configured_servers(
            config.mcp_servers, person, workspace / CONFIG_FILE, host_environ))
        policy = configured_policy(config.tools, registry, named)
        held: tuple[str, ...] = ()
        if not trust.config_trusted():
            config, held = untrusted_settings(config, base, workspace)
            policy, held_tools = untrusted_policy(
                policy, configured_policy(base.tools, registry, named), registry)
            held += held_tools
        if not trust.trusted():
            policy = untrusted_folder_policy(policy, registry)
        persona = PersonaRoots(
            workspace=workspace / PERSONA_FOLDER if trust.persona_trusted() else None,
            user=lily_home(config) / "persona", bundled=bundled_dir("persona"))
        if (persona.workspace is None and config.agent != base.agent
                and config.agent not in list_agents(persona)):
            # An agent only the held persona/ folder has: the person's default meanwhile.
            held += (f"agent: {config.agent} (a persona that came with this folder; "
                     f"stays {base.agent})",)
            config = replace(config, agent=base.agent)
        trust.held_settings = held
        return cls(
            workspace=workspace,
            config=config,
            registry=registry,
            commands=commands,
            policy=policy,
            skill_roots=resolve_skill_roots(config, workspace, home, served),
            persona_roots=persona,
            host=host or Host(environ=dict(environ) if environ is not None else Host().environ),
            trust=trust,
            # Only what applies: a workspace's servers wait for its trust.
            mcp_servers=configured_servers(config.mcp_servers, person,
                                           workspace / CONFIG_FILE, host_environ),
        )

    def reread(self, trust_store: TrustStore | None = None) -> Workspace:
        """This workspace read again from disk (lily.yaml, the trust store, the roots), over
        the same tools (MCP servers' joined them), commands and host: the one place a new
        workspace is made (trust given, tools added). `trust_store`: another store to
        read it under (what trusting it would bring); the session's otherwise."""
        return Workspace.load(self.workspace, self.host.environ, registry=self.registry,
                              host=self.host, trust_store=trust_store or self.trust.store,
                              commands=self.commands)

    @property
    def held_settings(self) -> tuple[str, ...]:
        """The lily.yaml settings not applied while the workspace is not trusted."""
        return self.trust.held_settings

    def script_settings(self) -> RunSettings:
        """What a skill script or shell command is given: lily.yaml's time limit,
        variables and memory limit."""
        from lily_kernel.execution.limits import Limits, RunSettings

        config = self.config
        return RunSettings(config.script_timeout, config.script_env,
                           Limits(memory_mb=config.memory_limit_mb))

    def python_settings(self) -> RunSettings:
        """What a run in the session's Python kernel is given (the memory limit holds from
        the kernel's start: a running kernel keeps the one it started with)."""
        from lily_kernel.execution.limits import Limits, RunSettings

        config = self.config
        return RunSettings(config.python_timeout, config.script_env,
                           Limits(memory_mb=config.memory_limit_mb))

    def snapshot_rules(self) -> LoadRules:
        """What the loader checks skills against: the registered tools, those the policy
        allows, the built-in commands."""
        return LoadRules(
            # A skill's tools are governed ones (load_skill is Lily's own selection).
            registered_tools=frozenset(t.name for t in self.registry.records() if t.governed),
            allowed_tools=self.policy.allowed_names(self.registry),
            reserved_commands=self.commands.names(),
            mcp_servers=frozenset(s.name for s in self.mcp_servers),
        )

    def load_snapshot(self, version: int) -> SkillSnapshot:
        """Build a snapshot from disk (raises SkillRootError for an unreadable root),
        workspace skills the person has not trusted held."""
        snapshot = load_snapshot(self.skill_roots, self.snapshot_rules(), self.host, version)
        snapshot, _, _ = self.trust.hold(snapshot)  # workspace skills wait for trust
        return snapshot

    @cached_property
    def skill_vectors(self) -> SkillVectors:
        """The skills' sentence vectors, kept under the Lily home for every session: the
        session's rankers read the skills' meaning with them, when the encoder is
        installed."""
        return SkillVectors(lily_home(self.config) / "cache")

    @cached_property
    def tool_context(self) -> ToolContext:
        """The workspace the tools are confined to, and Lily's own folders and files,
        which no tool may write wherever they are configured: every skills root, every
        persona folder, the Lily home (user skills and persona), lily.yaml and .lily/.
        Kept as configured; the write tool resolves them (links included) per write."""
        roots = self.persona_roots
        return ToolContext(
            workspace=self.workspace,
            protected=(
                self.workspace / CONFIG_FILE,
                self.workspace / ".lily",
                lily_home(self.config),
                *(Path(r.path) for r in self.skill_roots),
                self.workspace / PERSONA_FOLDER, roots.user, roots.bundled,
            ),
            # Runs may make and change skills in the workspace's skills/ (held until the
            # person trusts them, at their digest); not where trust comes from the
            # environment, which holds nothing (docs/execution.md, "Protected paths").
            runs_write=() if self.trust.by_environment else (self.workspace / "skills",),
        )

    def load_persona(self, agent: str) -> Persona:
        return load_persona(agent, self.persona_roots, self.config.persona_max_chars)

    def list_agents(self) -> list[str]:
        return list_agents(self.persona_roots)

    def session_model(self) -> ModelConfig:
        """The configured model; with none configured, the embedded one when installed."""
        if self.config.llm.model is None and find_embedded_model() is not None:
            return replace(self.config.llm, model=LOCAL_MODEL)
        return self.config.llm

    def new_session(self, session_id: str, created_at: str) -> Session:
        agent = self.config.agent
        agents = self.list_agents()
        if agent not in agents:  # never a silent session without its persona
            raise ConfigError(
                f"key 'agent' (lily.yaml or LILY_AGENT): no agent named '{agent}'; "
                f"available: {', '.join(agents)}.")
        model = self.session_model()
        return Session(
            session_id=session_id,
            created_at=created_at,
            active_agent=agent,
            persona=self.load_persona(agent),
            skill_snapshot=self.load_snapshot(1),
            model_config=model,
            embedded_default=model is not self.config.llm,
            skill_index=SkillIndex(self.skill_vectors),
        )

    def pending_trust(self) -> tuple[dict[str, str], list[str], list[str]]:
        """What trusting the workspace now would record (every workspace skill's digest),
        and what it would let take effect: the held skills, and the lily.yaml settings,
        the persona folder and the folder's record of turns, a line each (the same lines
        in the notebook's question and in `lily trust`)."""
        trust = self.trust
        # The skills as they would be with the lily.yaml and persona trusted: the roots the
        # file names are among them, so their skills are listed and recorded too.
        entry = trust.entry()
        trusting = TrustStore(None, {str(self.workspace): WorkspaceTrust(
            trust.config_digest, entry.skills if entry else {}, trust.persona_digest)})
        full = self.reread(trusting)
        raw = load_snapshot(full.skill_roots, full.snapshot_rules(), full.host)
        _, digests, held = hold_untrusted(raw, self.workspace, entry,
                                          person_roots=trust.person_roots, cache=trust.digests)
        persona, record = trust.persona_line(), trust.record_line()
        settings = [f"lily.yaml {line}" for line in trust.held_settings]
        return digests, [h.line() for h in held], settings + (
            [f"persona {persona}"] if persona else []) + ([f"record {record}"] if record else [])
