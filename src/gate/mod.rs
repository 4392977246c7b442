//! The admission gate: one function from a proposed call to a judgement, stage by stage.
//!
//! [`Gate::admit`] is the list of its stages. Each stage is a function in its own module that
//! takes the previous stage's value by value and returns the next, so no stage can be skipped or
//! reordered without a type error:
//!
//! parse ([`crate::call`]) ─► `target` ─► `validate` ─► `classify` ─► `resolve` ─► `vote`
//! (policy) ─► `confine` (sandbox) ─► `plan` ─► `approve` ─► hooks ([`crate::hooks`], the pre-tool
//! hooks of [`GateBuilder::hooks`], run inside [`Gate::admit`] so that no entry point can judge
//! without them). What each stage decides is in the one list of the stages,
//! `docs/architecture.md` (stages 1–10 there); `docs/admission.md` explains each for a user.
//! (The sandbox stage runs before approval so that nobody is asked about a call that could not
//! run; in plan mode, [`GateBuilder::mode`], the plan stage denies a call that is not read-only
//! before any prompt, lease or process.)
//!
//! After the gate come the lease, the execution, a writer's observed effects
//! ([`crate::effects`]) and the record: `docs/architecture.md` holds the whole list once, with
//! the module of each stage.
//!
//! The result is a [`Judgement`]. Only an [`Admitted`] can execute, only this module can make
//! one, and it is bound to the one tool that was judged; it runs only once leased
//! ([`crate::lease`]). `reasonix check` calls exactly this code and stops before the lease.
//!
//! Every entry point builds its gate with [`Gate::builder`], which cannot build without the
//! host's own files ([`HostFiles`]), so a dry run and a live run protect the same files.
//!
//! A gate is immutable once built, its mode included — with one exception, its compiled
//! policy when the policy is an OPA bundle ([`GateBuilder::bundle`], [`crate::bundle`]): at the
//! start of each admission the gate looks whether a newer bundle is live and, if so, compiles it
//! for its workspace and swaps it in whole; the admission then judges entirely with what it took
//! (one policy, one `policy_revision`), so a revision changes only between calls.
//!
//! Otherwise nothing changes: a session whose plan is approved does not switch this gate to
//! normal mode: it goes on with a second gate built from the same
//! specification in [`GateMode::Normal`], so no value shared with a running admission ever changes
//! under it, and a gate's answers depend on nothing but how it was built.
//!
//! Each admission is a `tracing` span (`call`, with the call's id and tool) whose `judged`
//! event at debug level carries every stage's duration in microseconds, the verdict and the
//! stage that settled it; the clock runs only when that level is on.

mod approve;
mod changes;
mod classify;
mod confine;
mod egress;
mod misuse;
mod plan;
mod pre_tool;
mod resolve;
mod target;
mod validate;
mod verdict;
mod vote;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::bundle::live::LiveBundle;

use crate::call::Call;
use crate::hooks::Hooks;
use crate::host::{HostFiles, Protected, Reach};
pub use crate::policy::input::GateMode;
use crate::policy::input::SessionInfo;
use crate::policy::{CompiledPolicy, PolicyError, PolicySet, Posture};
use crate::sandbox::jail::JailPlan;
use crate::sandbox::{Roots, RootsError, SharedJailPlan, WritePath};
use crate::tool::{Grant, Registry, RegistryError};
use crate::vocab::{Access, PathRole};
use approve::Approved;
pub use egress::EgressAsker;
use validate::Invalid;
pub(crate) use verdict::Parts;
pub use verdict::{Admission, Admitted, Judgement, Pending, Stage, Verdict};

/// Why a gate could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The workspace is unusable.
    #[error(transparent)]
    Roots(#[from] RootsError),
    /// A policy does not compile for this workspace.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A tool the mode brings (`submit_plan` in plan mode) clashes with a tool already given.
    #[error("plan mode cannot add its own tool: {0}")]
    Registry(#[from] RegistryError),
}

/// The admission gate for one workspace, registry, policy and posture. Immutable once built.
pub struct Gate {
    registry: Arc<Registry>,
    /// The compiled policy and the session it judges in; shared by the gates made from this one
    /// ([`Gate::with_registry`]), swapped whole when a newer bundle is live.
    current: Arc<RwLock<Arc<Current>>>,
    /// The bundle the policy comes from, when it does.
    live: Option<Arc<LiveBundle>>,
    roots: Roots,
    posture: Posture,
    mode: GateMode,
    explain: bool,
    /// Attach the policy input to every admission for a decision log, shown or not.
    inputs: bool,
    /// Planned when a call first needs it ([`SharedJailPlan`]).
    jail: SharedJailPlan,
    /// The plan hooks run under: [`JailPlan::read_only`], never a dry run's (`check` runs hooks).
    hooks_jail: SharedJailPlan,
    host: HostFiles,
    protected: Protected,
    /// Who answers an `ask` on a connection a running command asks for ([`Gate::with_egress_asker`]).
    asker: Option<EgressAsker>,
    /// The pre-tool hooks stage.
    pre_tool: PreTool,
}

/// The hooks stage of a gate: the hooks it runs, or leaves out and says so.
#[derive(Clone)]
enum PreTool {
    /// No hook is configured.
    None,
    /// The pre-tool hooks run on every call they match.
    Run(Arc<Hooks>),
    /// `reasonix check --no-hooks`: they do not run, and every admission of a tool one of them
    /// matches says they were left out.
    LeftOut(Arc<Hooks>),
}

/// What one admission judges with, taken once at its start: one policy, one revision.
struct Current {
    policy: Arc<CompiledPolicy>,
    session: SessionInfo,
    /// The bundle and the generation of [`LiveBundle`] this was compiled from (0 without one).
    bundle: Option<(String, String)>,
    generation: u64,
}

/// A gate still being configured; `H` is [`HostFiles`] once they are given, and only then can
/// it [`build`](GateBuilder::build).
#[must_use]
pub struct GateBuilder<'p, H> {
    registry: Registry,
    policy: &'p PolicySet,
    workspace: &'p Path,
    posture: Posture,
    mode: GateMode,
    explain: bool,
    inputs: bool,
    dry_run: bool,
    live: Option<Arc<LiveBundle>>,
    hooks: Option<Arc<Hooks>>,
    host: H,
}

/// The host's files are not given yet: a [`GateBuilder`] in this state cannot build.
pub struct NeedsHostFiles;

impl Gate {
    /// Starts a gate over `workspace` (which must exist) with these tools and policies; give it
    /// the host's files ([`GateBuilder::host_files`]), then build it.
    pub fn builder<'p>(
        registry: Registry,
        policy: &'p PolicySet,
        workspace: &'p Path,
    ) -> GateBuilder<'p, NeedsHostFiles> {
        GateBuilder {
            registry,
            policy,
            workspace,
            posture: Posture::default(),
            mode: GateMode::default(),
            explain: false,
            inputs: false,
            dry_run: false,
            live: None,
            hooks: None,
            host: NeedsHostFiles,
        }
    }
}

impl<'p, H> GateBuilder<'p, H> {
    /// Who answers an `ask` (default: interactive).
    pub fn posture(mut self, posture: Posture) -> Self {
        self.posture = posture;
        self
    }

    /// Whether changes may begin (default: normal). In [`GateMode::Plan`] the plan stage denies every
    /// call that is not read-only, the jail grants the workspace and the `write_roots` for
    /// reading only, and the gate offers the builtin tool `submit_plan`, which no normal-mode
    /// gate has.
    pub fn mode(mut self, mode: GateMode) -> Self {
        self.mode = mode;
        self
    }

    /// Attach the policy input document to every admission (`--explain`).
    pub fn explain(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }

    /// Attach the policy input document to every admission, for a decision log, without
    /// `--explain` (whose output shows it).
    pub fn inputs(mut self, inputs: bool) -> Self {
        self.inputs = inputs;
        self
    }

    /// A gate for a dry run (`reasonix check`), whose admissions never execute: the jail plan it
    /// shows is [`JailPlan::dry`], computed from what the machine says it offers, with nothing
    /// built and no part of the kernel's sandbox tried (default: false). An admission of such a
    /// gate runs nothing: its plan refuses.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The policy is a bundle's: the gate judges with the newest one `live` holds, compiled for
    /// its workspace at the start of the first admission that sees it, so each call is judged
    /// by one revision (the policy given to [`Gate::builder`] then only configures the jail).
    pub fn bundle(mut self, live: Option<Arc<LiveBundle>>) -> Self {
        self.live = live;
        self
    }

    /// The pre-tool and post-tool hooks of the settings ([`crate::hooks`]). The pre-tool hooks
    /// become the gate's last stage: every admission runs them (a connect of an MCP server
    /// excepted: it starts a server, not a tool), and a gate made from this one keeps them.
    pub fn hooks(mut self, hooks: Option<Arc<Hooks>>) -> Self {
        self.hooks = hooks.filter(|h| !h.is_empty());
        self
    }

    /// The host's own files, which no call may change ([`crate::host`]).
    pub fn host_files(self, host: HostFiles) -> GateBuilder<'p, HostFiles> {
        GateBuilder {
            registry: self.registry,
            policy: self.policy,
            workspace: self.workspace,
            posture: self.posture,
            mode: self.mode,
            explain: self.explain,
            inputs: self.inputs,
            dry_run: self.dry_run,
            live: self.live,
            hooks: self.hooks,
            host,
        }
    }
}

impl GateBuilder<'_, HostFiles> {
    /// Compiles the policy for the workspace; the jail is planned when a call first needs it.
    pub fn build(self) -> Result<Gate, GateError> {
        let registry = tools_for(self.registry, self.mode)?;
        let jail_config = self.policy.jail();
        let roots = Roots::new(self.workspace)?;
        let (write, read) = jail_config.roots(roots.home());
        let roots = roots.with(&write, &read);
        // In plan mode the jail holds commands to what the plan stage admits them as: readers.
        // Planned when a call first needs it ([`SharedJailPlan`]).
        let (workspace, home, mode, dry) = (
            roots.workspace().to_path_buf(),
            roots.home().map(Path::to_path_buf),
            self.mode,
            self.dry_run,
        );
        let host_files: Vec<PathBuf> = self.host.all().map(Path::to_path_buf).collect();
        // Hooks read the workspace and never change it, in a dry run too (they run there).
        let hooks_jail = {
            let (config, ws, home, files) = (
                jail_config.clone(),
                roots.workspace().to_path_buf(),
                roots.home().map(Path::to_path_buf),
                host_files.clone(),
            );
            SharedJailPlan::new(move || {
                JailPlan::read_only(&config, &ws, home.as_deref()).with_host_files(files)
            })
        };
        let jail = SharedJailPlan::new(move || {
            let (config, ws, home) = (&jail_config, &workspace, home.as_deref());
            match (mode, dry) {
                (GateMode::Normal, false) => JailPlan::new(config, ws, home),
                (GateMode::Plan, false) => JailPlan::read_only(config, ws, home),
                (GateMode::Normal, true) => JailPlan::dry(config, ws, home),
                (GateMode::Plan, true) => JailPlan::dry_read_only(config, ws, home),
            }
            .with_host_files(host_files)
        });
        let current = match &self.live {
            Some(live) => {
                let (bundle, generation) = live.current();
                Current {
                    policy: Arc::new(bundle.set.compile(&roots)?),
                    session: SessionInfo::new(
                        self.posture,
                        self.mode,
                        &roots,
                        Some(bundle.revision.clone()),
                    ),
                    bundle: Some((bundle.name.clone(), bundle.revision.clone())),
                    generation,
                }
            }
            None => Current {
                policy: Arc::new(self.policy.compile(&roots)?),
                session: SessionInfo::new(self.posture, self.mode, &roots, None),
                bundle: None,
                generation: 0,
            },
        };
        let protected = self.host.resolve(roots.workspace(), roots.home());
        Ok(Gate {
            registry: Arc::new(registry),
            current: Arc::new(RwLock::new(Arc::new(current))),
            live: self.live,
            roots,
            posture: self.posture,
            mode: self.mode,
            explain: self.explain,
            inputs: self.inputs,
            jail,
            hooks_jail,
            host: self.host,
            protected,
            asker: None,
            pre_tool: match self.hooks {
                Some(hooks) => PreTool::Run(hooks),
                None => PreTool::None,
            },
        })
    }
}

/// The tools a gate in `mode` offers: the registry given, and in plan mode `submit_plan` too.
fn tools_for(mut registry: Registry, mode: GateMode) -> Result<Registry, RegistryError> {
    if mode == GateMode::Plan {
        for tool in crate::tool::builtin::plan_mode() {
            registry.add_builtin(tool)?;
        }
    }
    Ok(registry)
}

impl Gate {
    /// The same gate over another registry: the same policy, roots, posture, jail and host
    /// files. A gate never changes; the MCP servers' tools join by building a new one.
    ///
    /// # Errors
    ///
    /// When the registry holds a tool the gate's mode adds itself (`submit_plan` in plan mode).
    pub fn with_registry(&self, registry: Registry) -> Result<Gate, RegistryError> {
        Ok(self.with_registry_arc(Arc::new(tools_for(registry, self.mode)?)))
    }

    /// The same gate, attaching the policy input document to every admission or not.
    pub fn with_explain(&self, explain: bool) -> Gate {
        let mut gate = self.with_registry_arc(Arc::clone(&self.registry));
        gate.explain = explain;
        gate
    }

    /// The same gate under another posture: the same policy (and the same live bundle, if
    /// any), roots, registry, jail and host files; the policy input's `session.posture` says
    /// the new one. `reasonix mcp serve` serves under `interactive` once the client can ask its
    /// user (MCP elicitation), and under the posture it was built with otherwise.
    pub fn with_posture(&self, posture: Posture) -> Gate {
        let held = self.current();
        let current = Current {
            policy: Arc::clone(&held.policy),
            session: SessionInfo {
                posture,
                ..held.session.clone()
            },
            bundle: held.bundle.clone(),
            generation: held.generation,
        };
        let mut gate = self.with_registry_arc(Arc::clone(&self.registry));
        gate.current = Arc::new(RwLock::new(Arc::new(current)));
        gate.posture = posture;
        gate
    }

    fn with_registry_arc(&self, registry: Arc<Registry>) -> Gate {
        Gate {
            registry,
            current: Arc::clone(&self.current),
            live: self.live.clone(),
            roots: self.roots.clone(),
            posture: self.posture,
            mode: self.mode,
            explain: self.explain,
            inputs: self.inputs,
            jail: self.jail.clone(),
            hooks_jail: self.hooks_jail.clone(),
            host: self.host.clone(),
            protected: self.protected.clone(),
            asker: self.asker.clone(),
            pre_tool: self.pre_tool.clone(),
        }
    }

    /// The hooks this gate was built with, pre-tool and post-tool (the session runs the
    /// post-tool ones once a call has ended).
    pub fn hooks(&self) -> Option<&Arc<Hooks>> {
        match &self.pre_tool {
            PreTool::None => None,
            PreTool::Run(h) | PreTool::LeftOut(h) => Some(h),
        }
    }

    /// The same gate with `hooks` as its hooks stage, in place of any it had. Hooks only
    /// narrow, so this never widens what the gate admits.
    pub fn with_hooks(&self, hooks: Arc<Hooks>) -> Gate {
        let mut gate = self.with_registry_arc(Arc::clone(&self.registry));
        gate.pre_tool = if hooks.is_empty() {
            PreTool::None
        } else {
            PreTool::Run(hooks)
        };
        gate
    }

    /// The same gate with its pre-tool hooks left out (`reasonix check --no-hooks`): every
    /// admission of a tool one of them matches says so in its reasons, so a verdict judged
    /// without them never passes for one judged with them.
    pub fn leaving_out_hooks(&self) -> Gate {
        let mut gate = self.with_registry_arc(Arc::clone(&self.registry));
        if let PreTool::Run(hooks) = &self.pre_tool {
            gate.pre_tool = PreTool::LeftOut(Arc::clone(hooks));
        }
        gate
    }

    /// What the next admission judges with: the compiled policy in force, or — when a newer
    /// bundle is live — that bundle compiled for this workspace and swapped in whole. A bundle
    /// that does not compile here keeps the policy in force (and says so in the logs).
    fn current(&self) -> Arc<Current> {
        // A poisoned lock only means a swap panicked: the value inside is still whole.
        let held = Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()));
        let Some(live) = &self.live else {
            return held;
        };
        if live.generation() == held.generation {
            return held;
        }
        let (bundle, generation) = live.current();
        let next = match bundle.set.compile(&self.roots) {
            Ok(policy) => Current {
                policy: Arc::new(policy),
                session: SessionInfo {
                    policy_revision: Some(bundle.revision.clone()),
                    ..held.session.clone()
                },
                bundle: Some((bundle.name.clone(), bundle.revision.clone())),
                generation,
            },
            Err(e) => {
                tracing::warn!(
                    revision = %bundle.revision,
                    "the new bundle does not compile for this workspace; the policy in force stays: {e}"
                );
                Current {
                    policy: Arc::clone(&held.policy),
                    session: held.session.clone(),
                    bundle: held.bundle.clone(),
                    generation,
                }
            }
        };
        let next = Arc::new(next);
        let mut slot = self.current.write().unwrap_or_else(|p| p.into_inner());
        if slot.generation < next.generation {
            *slot = Arc::clone(&next);
        }
        next
    }

    /// The deny and ask rules with `paths` that would protect files from a call of `tool` with
    /// these effects, as Reasonix's own `grep` and `glob` withhold them: for an adapter whose
    /// host runs the search itself and withholds nothing (`reasonix hook claude`).
    pub fn withholding(
        &self,
        tool: &str,
        effects: &std::collections::BTreeSet<crate::vocab::Effect>,
    ) -> crate::policy::PathFilter {
        self.current().policy.withholding(tool, effects)
    }

    /// The revision of the bundle in force (`None` when the policy is not a bundle).
    pub fn policy_revision(&self) -> Option<String> {
        self.current().session.policy_revision.clone()
    }

    /// The bundle in force, as `(name, revision)` (`None` when the policy is not a bundle).
    pub fn bundle(&self) -> Option<(String, String)> {
        self.current().bundle.clone()
    }

    /// The same gate, with someone to answer an `ask` on a connection that a running command's
    /// process asks the egress proxy for (`network_connect`): the session's approver. Without
    /// one, such an ask is refused — nobody could answer it while the command runs.
    pub fn with_egress_asker(&self, asker: EgressAsker) -> Gate {
        let mut gate = self.with_registry_arc(Arc::clone(&self.registry));
        gate.asker = Some(asker);
        gate
    }

    /// The jail plan bash calls run under (planned now if no call needed it yet).
    pub fn jail(&self) -> &JailPlan {
        self.jail.get()
    }

    /// The jail plan pre- and post-tool hooks run under: the workspace and the write roots
    /// read-only ([`JailPlan::read_only`]), planned when a hook first runs. Never a dry run's plan:
    /// `reasonix check` runs the hooks too.
    pub fn hooks_jail(&self) -> &JailPlan {
        self.hooks_jail.get()
    }

    /// The shape a command this gate did not admit (`reasonix sandbox exec`) runs in under
    /// `plan`, writing as `writes` says: what this gate's policy protects from reading — for
    /// `bash` — covered, as an admitted bash call's would be (issue 25).
    pub fn command_shape(
        &self,
        plan: &JailPlan,
        writes: crate::sandbox::jail::Writes,
    ) -> crate::sandbox::jail::Shape {
        self.current()
            .policy
            .withholding("bash", &[crate::vocab::Effect::Read].into())
            .shape(plan, writes)
    }

    /// The judge of what a command this gate did not admit changed (`reasonix sandbox exec
    /// --observe`): each change judged as the file tool that would make it, as an admitted
    /// bash writer's changes are; what only the fallback asks about is the command's own
    /// unless it is a script whose programs only read, and so is the bookkeeping of the
    /// programs it runs (`argv`, or the script of `bash -c` / `sh -c`, analysed).
    pub fn command_changes(&self, argv: &[String]) -> Arc<dyn crate::effects::ChangeJudge> {
        let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
        let mut programs: Vec<String> = argv.first().map(|p| name(p)).into_iter().collect();
        // Any program but a shell running a script the analysis reads may write anything.
        let mut unpredictable = true;
        if let [shell, flag, script, ..] = argv
            && matches!(name(shell).as_str(), "bash" | "sh" | "dash")
            && flag == "-c"
        {
            let analysis = crate::shell::Analysis::of(script);
            unpredictable = !analysis.programs_read_only;
            programs.extend(analysis.commands.iter().map(|c| c.basename().to_owned()));
        }
        changes::change_judge(
            self,
            changes::Own {
                unpredictable,
                written: Vec::new(),
                programs,
            },
        )
    }

    /// The tools this gate admits calls to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The roots file tools are confined to.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// The posture.
    pub fn posture(&self) -> Posture {
        self.posture
    }

    /// The mode: whether changes may begin.
    pub fn mode(&self) -> GateMode {
        self.mode
    }

    /// Whether `reasonix rewind` may carry out `restore` at `path` (issue 28): the path must be
    /// [`Gate::changeable`], and the restore is judged as the file tool's call it is —
    /// `write_file {path, content}` or `delete_file {path}` — under the interactive posture, so
    /// that an ask comes back as one. A deny refuses it. An ask by a rule (`git-internals` on
    /// `.git/**`, `ci-workflows`) refuses it too: the person who runs a rewind asked for the
    /// workspace back, not for that file, and a forged record must not reach it; only an ask
    /// of the fallback alone (`defaults.writer`) is the rewind's own.
    ///
    /// # Errors
    ///
    /// Why the restore may not happen, in words.
    pub fn restorable(&self, path: &Path, restore: Restore<'_>) -> Result<(), String> {
        self.changeable(path)?;
        let shown = path.display().to_string();
        let (tool, call) = match restore {
            Restore::Delete => (
                "delete_file",
                serde_json::json!({"name": "delete_file", "arguments": {"path": shown}}),
            ),
            Restore::Write { content } => (
                "write_file",
                serde_json::json!({"name": "write_file", "arguments": {"path": shown, "content": content.unwrap_or("")}}),
            ),
        };
        let judgement = self
            .with_posture(Posture::Interactive)
            .admit_derived(&call.to_string());
        let a = judgement.admission();
        let reasons = a.reasons.join("; ");
        match judgement {
            Judgement::Allowed(_) => Ok(()),
            Judgement::Refused(_) => Err(format!("the gate denies the {tool} it is: {reasons}")),
            Judgement::Ask(_) => {
                let rules: Vec<&str> = a
                    .rules
                    .iter()
                    .filter(|r| r.decision == crate::policy::Decision::Ask && r.decisive)
                    .map(|r| r.id.as_str())
                    .collect();
                if rules.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "the policy asks about the {tool} it is (rule {}: {reasons}); a rewind does not restore what a rule asks about — restore it by hand if you mean to",
                        rules.join(", ")
                    ))
                }
            }
        }
    }

    /// Whether the host lets anything change `path` (absolute, resolved) at all, whatever any
    /// policy says: it must lie beneath a root open for writing (by components) and must be
    /// none of the host's own files nor a folder that holds one — the sandbox stage's rules for
    /// a file tool. `reasonix rewind`, which writes outside any jail, writes only where this
    /// holds, so a forged record cannot make it write elsewhere.
    ///
    /// # Errors
    ///
    /// Why the path is out of bounds, in words.
    pub fn changeable(&self, path: &Path) -> Result<(), String> {
        if !path.is_absolute() {
            return Err(format!("{} is not an absolute path", path.display()));
        }
        let inside = self
            .roots
            .all()
            .any(|(root, access)| access == Access::Write && path.starts_with(root));
        if !inside {
            return Err(format!(
                "{} lies outside every folder open for writing (the workspace {} and the write_roots)",
                path.display(),
                self.roots.workspace().display()
            ));
        }
        match self.protected.conflict(path, Reach::Changes) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The host's own files this gate protects.
    pub fn host_files(&self) -> &HostFiles {
        &self.host
    }

    /// Judges a call given as JSON text (a CALL argument or one JSONL line).
    pub fn admit_text(&self, text: &str) -> Judgement {
        match Call::parse(text) {
            Ok(call) => self.admit(&call),
            Err((id, e)) => {
                Judgement::Refused(Admission::invalid(id, None, &e.to_string(), self.posture))
            }
        }
    }

    /// Judges, by stages 1–9 only, a call the gate makes itself from what an admitted call
    /// does — a connection its processes ask for, a change they made, a restore of `rewind`:
    /// the hooks judged the call that does it.
    pub(crate) fn admit_derived(&self, text: &str) -> Judgement {
        match Call::parse(text) {
            Ok(call) => self.admit_stages(&call, false),
            Err((id, e)) => {
                Judgement::Refused(Admission::invalid(id, None, &e.to_string(), self.posture))
            }
        }
    }

    /// Judges a parsed call. See the module doc for the stages: the gate's, then its hooks.
    pub fn admit(&self, call: &Call) -> Judgement {
        match &self.pre_tool {
            PreTool::Run(hooks) if !crate::mcp::tools::is_connect(&call.name) => {
                // Hooks receive the policy input; it stays only where it was asked for.
                let judged = pre_tool::pre_tool(hooks, self, call, self.admit_stages(call, true));
                if self.explain || self.inputs {
                    judged
                } else {
                    judged.without_input()
                }
            }
            PreTool::LeftOut(hooks) => {
                let judged = self.admit_stages(call, false);
                let a = judged.admission();
                if a.verdict != Verdict::Invalid
                    && a.tool.as_deref().is_some_and(|t| hooks.matches(t))
                {
                    judged.note("pre-tool hooks left out (--no-hooks)".to_owned())
                } else {
                    judged
                }
            }
            _ => self.admit_stages(call, false),
        }
    }

    /// Stages 1–9, without the hooks stage (which runs them again on a call a hook replaced).
    /// `input`: attach the policy input even when neither `explain` nor `inputs` asks for it.
    pub(crate) fn admit_stages(&self, call: &Call, input: bool) -> Judgement {
        let span = tracing::debug_span!(
            "call",
            id = %crate::text::visible(call.id.as_deref().unwrap_or("")),
            tool = %crate::text::visible(&call.name),
        );
        let _entered = span.enter();
        let mut laps = Laps::start();
        let current = self.current();
        let input = input || self.explain || self.inputs;
        match self.stages(call, &current, &mut laps, input) {
            Ok(judgement) => {
                if laps.on() {
                    let a = judgement.admission();
                    laps.report(a.verdict.as_str(), a.stage.as_str());
                }
                laps.export(judgement.admission());
                judgement
            }
            Err(Invalid { id, tool, message }) => {
                laps.report("invalid", Stage::Validate.as_str());
                let mut a = Admission::invalid(id, tool, &message, self.posture);
                a.policy_revision = current.session.policy_revision.clone();
                laps.export(&a);
                Judgement::Refused(a)
            }
        }
    }

    /// The stages, in order.
    fn stages(
        &self,
        call: &Call,
        current: &Current,
        laps: &mut Laps,
        input: bool,
    ) -> Result<Judgement, Invalid> {
        // Each stage as its lap names it (OpenTelemetry export makes a span of each).
        macro_rules! stage {
            ($name:literal, $e:expr) => {{ $e }};
        }
        let targeted = stage!("gate.target", target::target(&self.registry, call)?);
        laps.lap(0);
        let validated = stage!(
            "gate.validate",
            validate::validate(&self.registry, &targeted.call, targeted.via)?
        );
        laps.lap(1);
        let classified = stage!(
            "gate.classify",
            classify::classify(validated, &current.policy)?
        );
        laps.lap(2);
        let resolved = stage!("gate.resolve", resolve::resolve(classified, &self.roots)?);
        laps.lap(3);
        let ruled = stage!(
            "gate.policy",
            vote::vote(resolved, &current.policy, &current.session, input,)
        );
        laps.lap(4);
        let confined = stage!(
            "gate.sandbox",
            confine::confine(ruled, &self.protected, &self.jail)
        );
        laps.lap(5);
        let planned = stage!("gate.plan", plan::plan(confined, self.mode));
        laps.lap(6);
        let approved = stage!(
            "gate.approve",
            approve::approve(planned, self.posture, current.policy.defaults())
        );
        laps.lap(7);
        Ok(self.seal(approved, current, input))
    }

    /// The verdict as output, and the token when the call may run.
    fn seal(&self, approved: Approved, current: &Current, input: bool) -> Judgement {
        let Approved { confined, asked } = approved;
        let ruled = confined.ruled;
        let resolved = ruled.resolved;
        let (call, class, touched) = (resolved.call, resolved.class, resolved.touched);
        let verdict = confined.verdict;
        let admission = Admission {
            id: call.id,
            tool: Some(call.name.clone()),
            via: call.via,
            verdict,
            stage: confined.stage,
            reasons: confined.reasons,
            rules: ruled.ruling.hits,
            fallback: ruled.ruling.fallback,
            effects: class.effects.iter().copied().collect(),
            paths: ruled.paths,
            read_only: Some(class.read_only),
            bash: class
                .bash
                .as_ref()
                .and_then(|b| serde_json::to_value(b).ok()),
            posture: self.posture,
            policy_revision: current.session.policy_revision.clone(),
            input: ruled.input.filter(|_| input),
            sandbox: (class.bash.is_some() || class.starts_process).then(|| {
                let mut view = self.jail.view();
                if class.bash.is_some() {
                    view.run = Some(self.jail.get().runs(!class.read_only));
                }
                view
            }),
            annotations: call.tool.annotations(),
            replaced_arguments: None,
            replacement: None,
            ask_settled_by: asked.then_some("posture"),
        };
        if !matches!(verdict, Verdict::Allow | Verdict::Ask) {
            return Judgement::Refused(admission);
        }
        let mut grants = Vec::with_capacity(touched.len());
        for t in touched.into_iter().filter(|t| t.role != PathRole::Argument) {
            match t.placement {
                Ok(p) if t.access == Access::Write => {
                    grants.push(Grant::Write(WritePath::grant(p)));
                }
                Ok(p) => grants.push(Grant::Read(p)),
                // The sandbox stage refused every call with an unplaced path.
                Err(_) => return Judgement::Refused(admission),
            }
        }
        let withheld = current.policy.withholding(&call.name, &class.effects);
        // What every jail of this call covers: the paths a deny or ask rule protects from
        // reading (issue 25).
        let protected = (class.bash.is_some() || class.starts_process).then(|| {
            current
                .policy
                .withholding(&call.name, &[crate::vocab::Effect::Read].into())
        });
        let changes = class.bash.as_ref().map(|analysis| {
            let own = changes::Own {
                unpredictable: !analysis.programs_read_only,
                written: admission
                    .paths
                    .iter()
                    .filter(|p| p.access == Access::Write)
                    .filter_map(|p| p.path.as_ref().map(PathBuf::from))
                    .collect(),
                programs: analysis
                    .commands
                    .iter()
                    .map(|c| c.basename().to_owned())
                    .collect(),
            };
            changes::change_judge(self, own)
        });
        let admitted = Admitted::new(Parts {
            sealed: (),
            admission,
            tool: call.tool,
            arguments: call.arguments,
            grants,
            withheld,
            jail: self.jail.clone(),
            egress: class.bash.as_ref().map(|_| egress::connection_judge(self)),
            protected,
            changes,
        });
        if verdict == Verdict::Allow {
            Judgement::Allowed(admitted)
        } else {
            Judgement::Ask(Pending::new(admitted))
        }
    }
}

/// Each stage's duration for the `judged` event and OpenTelemetry's stage spans, measured only
/// when debug logs or export are on.
struct Laps {
    /// When the last stage ended; `None` when nobody listens.
    last: Option<Instant>,
    /// When the first began, on the wall clock (for export; the epoch when export is off).
    began: std::time::SystemTime,
    /// Stages ended.
    done: usize,
    /// Microseconds per stage: target, validate, classify, resolve, policy, sandbox, plan,
    /// approve.
    us: [u64; 8],
}

impl Laps {
    fn start() -> Laps {
        let export = crate::telemetry::on();
        Laps {
            last: (export || tracing::enabled!(tracing::Level::DEBUG)).then(Instant::now),
            began: if export {
                std::time::SystemTime::now()
            } else {
                std::time::UNIX_EPOCH
            },
            done: 0,
            us: [0; 8],
        }
    }

    /// The stages' span names, in order.
    const NAMES: [&'static str; 8] = [
        "gate.target",
        "gate.validate",
        "gate.classify",
        "gate.resolve",
        "gate.policy",
        "gate.sandbox",
        "gate.plan",
        "gate.approve",
    ];

    /// With OpenTelemetry export on: the call's span and a child per stage that ran, with the
    /// admission's `reasonix.*` attributes (under the span the caller made current: a run's
    /// `execute_tool`, a `check` batch).
    fn export(&self, a: &Admission) {
        let Some(last) = self.last.filter(|_| crate::telemetry::on()) else {
            return;
        };
        let mut us = self.us;
        // The stage that found an invalid call ran too, without a lap: it ended now.
        if self.done < us.len() {
            us[self.done] = u64::try_from(last.elapsed().as_micros()).unwrap_or(u64::MAX);
        }
        let ran = (self.done + 1).min(us.len());
        crate::telemetry::gate_spans(self.began, &Self::NAMES, us, ran, a.attributes());
    }

    fn on(&self) -> bool {
        self.last.is_some()
    }

    /// Stage `i` has ended.
    fn lap(&mut self, i: usize) {
        if let Some(last) = self.last {
            let now = Instant::now();
            self.us[i] = u64::try_from(now.duration_since(last).as_micros()).unwrap_or(u64::MAX);
            self.last = Some(now);
            self.done = i + 1;
        }
    }

    fn report(&self, verdict: &str, stage: &str) {
        if self.on() && tracing::enabled!(tracing::Level::DEBUG) {
            let [
                target,
                validate,
                classify,
                resolve,
                policy,
                sandbox,
                plan,
                approve,
            ] = self.us;
            tracing::debug!(
                verdict,
                stage,
                target_us = target,
                validate_us = validate,
                classify_us = classify,
                resolve_us = resolve,
                policy_us = policy,
                sandbox_us = sandbox,
                plan_us = plan,
                approve_us = approve,
                "judged"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Gate>();
    }

    /// `reasonix mcp serve` goes over to `interactive` once the client can ask its user: the
    /// ask then reaches an approver, and the policy input says the new posture.
    #[test]
    fn the_same_gate_under_another_posture_asks_where_unattended_denied() {
        let dir = tempfile::tempdir().unwrap();
        let policy = PolicySet::embedded_default();
        let unattended = Gate::builder(Registry::with_builtins(), &policy, dir.path())
            .posture(Posture::Unattended)
            .explain(true)
            .host_files(HostFiles::for_workspace(dir.path()))
            .build()
            .unwrap();
        let write = r#"{"name":"write_file","arguments":{"path":"a","content":""}}"#;
        let denied = unattended.admit_text(write);
        assert_eq!(denied.admission().verdict, Verdict::Deny);
        assert_eq!(denied.admission().stage, Stage::Approve);
        let interactive = unattended.with_posture(Posture::Interactive);
        let asked = interactive.admit_text(write);
        assert!(
            matches!(asked, Judgement::Ask(_)),
            "{:?}",
            asked.admission()
        );
        assert_eq!(asked.admission().posture, Posture::Interactive);
        let input = asked.admission().input.as_ref().unwrap();
        assert_eq!(input.session.posture, Posture::Interactive);
        // The gate it came from is unchanged.
        assert_eq!(
            unattended.admit_text(write).admission().verdict,
            Verdict::Deny
        );
    }

    /// Issue 12: planning the jail looks at the kernel and the disk; file tools never need it.
    #[test]
    fn the_jail_is_planned_only_when_a_call_needs_it() {
        let dir = tempfile::tempdir().unwrap();
        let policy = PolicySet::embedded_default();
        let gate = Gate::builder(Registry::with_builtins(), &policy, dir.path())
            .host_files(HostFiles::for_workspace(dir.path()))
            .build()
            .unwrap();
        let read = gate.admit_text(r#"{"name":"read_file","arguments":{"path":"a"}}"#);
        let Judgement::Allowed(admitted) = read else {
            panic!("{:?}", read.admission());
        };
        assert!(admitted.admission().sandbox.is_none());
        gate.admit_text(r#"{"name":"write_file","arguments":{"path":"a","content":""}}"#);
        assert!(!gate.jail.is_made(), "a file tool planned the jail");
        let bash = gate.admit_text(r#"{"name":"bash","arguments":{"command":"ls"}}"#);
        assert!(gate.jail.is_made());
        assert_eq!(
            bash.admission().sandbox.as_ref().map(|v| v.mode.as_str()),
            Some(gate.jail().mode().as_str())
        );
    }
}

/// What `reasonix rewind` does at a path ([`Gate::restorable`]), as the gate judges it: the `write_file` or `delete_file` call
/// it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restore<'a> {
    /// A file written back, with its kept content when that is text the gate may read.
    Write {
        /// The content, when it is UTF-8 of at most 1 MiB.
        content: Option<&'a str>,
    },
    /// A file (or an empty folder) removed, or a folder moved away from here.
    Delete,
}
