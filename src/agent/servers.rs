//! Bringing a workspace's MCP servers up through the gate, for `run` and `check` alike.
//!
//! 1. Every configured server gets a connect call, `mcp_connect__NAME` ([`crate::mcp::tools`]),
//!    in a registry of its own beside the builtins (the *connect gate*: the session's gate over
//!    that registry). The model is never offered these calls.
//! 2. [`Servers::connect`] judges one server's connect call. A deny — or an ask nobody
//!    approves — starts nothing: the server's tools are withdrawn with that reason, so a call
//!    to one is `invalid`, naming the refusal. An admitted connect takes its lease and runs,
//!    which starts the process (or reaches the URL), does the handshake and lists the tools.
//! 3. [`Servers::registry`] is the builtins plus every tool of every connected server
//!    (`mcp__NAME__TOOL`), whose schemas are compiled there; a tool whose schema does not
//!    compile, or whose name is not a valid tool name, is withdrawn with the reason. The
//!    session's gate is rebuilt over it ([`Gate::with_registry`]).
//! 4. A server that dies (its connection failed mid-call) is restarted only when a call names
//!    one of its tools again, and only through [`Servers::restart`]: the same connect call,
//!    judged again by the same connect gate and answered by the same approver, then started
//!    and listed anew. At most [`MAX_RESTARTS`] restarts per server per session; past that,
//!    after a refused restart, or one that did not start, the server stays down for the
//!    session and its tools are withdrawn with why.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::call::Call;
use crate::gate::{Admission, Gate, Judgement, Verdict};
use crate::lease::Leases;
use crate::mcp::tools::Slot;
use crate::mcp::{ConnectTool, Connection, Server, ServerTool, connect_arguments, connect_name};
use crate::record::{AdmissionRecord, Approval, ConnectRecord, Outcome, now_ms};
use crate::tool::{Registry, RegistryError};

/// The most times one server is restarted in a session (after its connection died): a server
/// that crashes on every call is judged and started this many times again, not forever.
pub const MAX_RESTARTS: usize = 3;

/// How one server's connect ended.
pub struct Connected {
    /// The gate's conclusion on the connect call.
    pub admission: Admission,
    /// Who let an ask through, or refused it.
    pub approval: Option<Approval>,
    /// The connection, or why there is none.
    pub result: Result<Arc<Connection>, String>,
    /// Whether a connect was started at all (false: the gate or a person refused it).
    pub started: bool,
    /// When it was judged.
    pub time_ms: u128,
    /// Which restart this was (`None`: the first connect).
    pub restart: Option<usize>,
}

/// The servers of a session and what became of each.
pub struct Servers {
    configured: BTreeMap<String, Server>,
    connect_gate: Gate,
    slots: BTreeMap<String, Slot>,
    tried: BTreeMap<String, Connected>,
    restarts: BTreeMap<String, usize>,
    /// Every tool each server listed in this session, by its registry name: a tool a restarted
    /// server no longer lists is withdrawn, saying so.
    listed: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// How the servers it starts may write (issue 25: not at all while the session plans).
    writes: crate::mcp::tools::ServerWrites,
    /// Servers started read-only while the session planned, to be restarted writable by their
    /// next call now that a plan is approved.
    stale: std::collections::BTreeSet<String>,
}

impl Servers {
    /// The servers `configured`, to be connected through `gate` (built over the builtins).
    pub fn new(configured: Vec<Server>, gate: &Gate) -> Result<Servers, RegistryError> {
        let writes: crate::mcp::tools::ServerWrites =
            Arc::new(std::sync::Mutex::new(crate::sandbox::jail::Writes::Direct));
        let mut registry = Registry::with_builtins();
        let mut slots = BTreeMap::new();
        let mut by_name = BTreeMap::new();
        for server in configured {
            let (tool, slot) = ConnectTool::new(
                server.clone(),
                gate.roots().workspace(),
                Arc::clone(&writes),
            );
            registry.add_mcp(Arc::new(tool))?;
            slots.insert(server.name.clone(), slot);
            by_name.insert(server.name.clone(), server);
        }
        Ok(Servers {
            writes,
            stale: std::collections::BTreeSet::new(),
            configured: by_name,
            connect_gate: gate.with_registry(registry)?,
            slots,
            tried: BTreeMap::new(),
            restarts: BTreeMap::new(),
            listed: BTreeMap::new(),
        })
    }

    /// The servers started from now on write as `writes` says: [`Writes::None`] while a
    /// session is in plan mode (their jail's workspace and write roots read-only), in place
    /// once a plan is approved (issue 25). A server already running keeps how it was started;
    /// see [`Servers::restart_all`].
    ///
    /// [`Writes::None`]: crate::sandbox::jail::Writes::None
    pub fn set_writes(&mut self, writes: crate::sandbox::jail::Writes) {
        let mut now = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let was = *now;
        *now = writes;
        drop(now);
        if was == crate::sandbox::jail::Writes::None && writes != was {
            self.stale = self
                .tried
                .iter()
                .filter(|(_, c)| c.result.is_ok())
                .map(|(name, _)| name.clone())
                .collect();
        }
    }

    /// The configured servers' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.configured.keys().map(String::as_str)
    }

    /// Whether `name` is a configured server.
    pub fn has(&self, name: &str) -> bool {
        self.configured.contains_key(name)
    }

    /// The gate every connect call is judged by (`check` judges a connect call given to it
    /// with this gate, and runs nothing).
    pub fn connect_gate(&self) -> &Gate {
        &self.connect_gate
    }

    /// Whether `name` was tried already.
    pub fn tried(&self, name: &str) -> bool {
        self.tried.contains_key(name)
    }

    /// Judges server `name`'s connect call and, when admitted, starts it. `approve` answers an
    /// ask (`None`: nobody may approve; the ask blocks). Blocking; call it outside any async
    /// runtime's worker. Tries a server once: a second call returns the first outcome.
    pub fn connect(
        &mut self,
        name: &str,
        approve: &mut dyn FnMut(&Admission) -> Option<Approval>,
    ) -> &Connected {
        if !self.tried.contains_key(name) {
            let connected = self.try_connect(name, approve);
            self.keep(name, connected);
        }
        &self.tried[name]
    }

    /// Why server `name` died, when it was connected and its connection has since failed:
    /// its next call needs a [`restart`](Servers::restart). `None` when it is alive, was never
    /// tried, or was refused or did not start (those stay as they are).
    pub fn died(&self, name: &str) -> Option<String> {
        if self.stale.contains(name) {
            return Some(
                "it was started read-only while the session planned; it starts again writable now that a plan is approved".into(),
            );
        }
        match &self.tried.get(name)?.result {
            Ok(connection) => connection.dead(),
            Err(_) => None,
        }
    }

    /// Restarts server `name`, which [died](Servers::died): its connect call is judged again
    /// as the first one was (same gate; an ask goes to `approve`) and, only when admitted,
    /// started again (the dead connection is dropped, with whatever of its process is left),
    /// its tools listed and their schemas compiled anew by [`Servers::registry`]. The outcome
    /// replaces the first: a refused restart leaves the server refused for the session.
    ///
    /// # Errors
    ///
    /// When the server was restarted [`MAX_RESTARTS`] times already, nothing is judged or
    /// started: the server stays down for the session, its tools withdrawn with that reason,
    /// which is returned.
    pub fn restart(
        &mut self,
        name: &str,
        approve: &mut dyn FnMut(&Admission) -> Option<Approval>,
    ) -> Result<&Connected, String> {
        // A planned restart (plan approved) is not a death: it does not count.
        let planned = self.stale.remove(name);
        let done = self.restarts.get(name).copied().unwrap_or(0);
        if !planned && done >= MAX_RESTARTS {
            let why = format!(
                "it died again after {done} restarts, and a server is restarted at most {MAX_RESTARTS} times per session ({})",
                self.died(name).unwrap_or_default()
            );
            if let Some(last) = self.tried.get_mut(name) {
                last.result = Err(why.clone());
            }
            return Err(why);
        }
        if !planned {
            self.restarts.insert(name.to_owned(), done + 1);
        }
        // The dead connection is let go: what is left of its process is killed once the last
        // of its tools (in the gate the caller is about to replace) lets go of it too.
        self.tried.remove(name);
        let mut connected = self.try_connect(name, approve);
        connected.restart = Some(done + 1);
        self.keep(name, connected);
        Ok(&self.tried[name])
    }

    /// Keeps how server `name`'s connect ended, and the names of the tools it listed.
    fn keep(&mut self, name: &str, connected: Connected) {
        if let Ok(connection) = &connected.result {
            let prefix = crate::mcp::tool_prefix(name);
            let names = connection
                .tools()
                .iter()
                .map(|t| format!("{prefix}{}", t.name));
            self.listed
                .entry(name.to_owned())
                .or_default()
                .extend(names);
        }
        self.tried.insert(name.to_owned(), connected);
    }

    fn try_connect(
        &self,
        name: &str,
        approve: &mut dyn FnMut(&Admission) -> Option<Approval>,
    ) -> Connected {
        let time_ms = now_ms();
        let Some(server) = self.configured.get(name) else {
            return Connected {
                admission: Admission::unreadable(
                    format!("no MCP server named {name:?} is configured"),
                    self.connect_gate.posture(),
                ),
                approval: None,
                result: Err(format!("no MCP server named {name:?} is configured")),
                started: false,
                time_ms,
                restart: None,
            };
        };
        let call = Call::new(
            connect_name(name),
            connect_arguments(server, self.connect_gate.roots().workspace()),
        );
        let (admitted, admission, approval) = match self.connect_gate.admit(&call) {
            Judgement::Allowed(a) => {
                let admission = a.admission().clone();
                (Some(a), admission, None)
            }
            Judgement::Ask(pending) => {
                let admission = pending.admission().clone();
                match approve(&admission) {
                    Some(Approval::Deny) | None => (None, admission, Some(Approval::Deny)),
                    Some(how) => (Some(pending.approve()), admission, Some(how)),
                }
            }
            Judgement::Refused(admission) => (None, admission, None),
        };
        let Some(admitted) = admitted else {
            let why = match (admission.verdict, approval) {
                (Verdict::Ask, _) => format!(
                    "its connect call {} needs a person's approval, which it did not get ({})",
                    connect_name(name),
                    admission.reasons.join("; ")
                ),
                _ => format!(
                    "its connect call {} was refused: {} at stage {} ({})",
                    connect_name(name),
                    admission.verdict,
                    admission.stage.as_str(),
                    admission.reasons.join("; ")
                ),
            };
            return Connected {
                admission,
                approval,
                result: Err(why),
                started: false,
                time_ms,
                restart: None,
            };
        };
        let leases = Leases::new();
        let result = match admitted.lease_blocking(&leases) {
            Ok(leased) => {
                let executed = leased.execute();
                let slot = self.slots.get(name).and_then(|s| match s.lock() {
                    Ok(mut s) => s.take(),
                    Err(p) => p.into_inner().take(),
                });
                match (executed.result, slot) {
                    (_, Some(Ok(connection))) => Ok(connection),
                    (_, Some(Err(e))) => Err(format!("it did not start: {e}")),
                    (Err(e), None) => Err(format!("it did not start: {e}")),
                    (Ok(_), None) => Err("it did not start (no connection was made)".into()),
                }
            }
            Err(e) => Err(format!("cannot take the connect call's lease: {e}")),
        };
        Connected {
            admission,
            approval,
            result,
            started: true,
            time_ms,
            restart: None,
        }
    }

    /// The builtins and every connected server's tools; withdrawn: the tools of every server
    /// refused or failed, and each tool that could not be registered, with why (also returned,
    /// as `(tool, why)`, for stderr and the record).
    pub fn registry(&self) -> (Registry, BTreeMap<String, Vec<(String, String)>>) {
        let mut registry = Registry::with_builtins();
        let mut unavailable: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (name, connected) in &self.tried {
            match &connected.result {
                Ok(connection) => {
                    let now = ServerTool::all(connection);
                    let before = self.listed.get(name).into_iter().flatten();
                    for gone in before
                        .filter(|t| !now.iter().any(|n| crate::tool::Tool::name(n) == t.as_str()))
                    {
                        let why = format!(
                            "MCP server {name:?} listed it before it was restarted, and no longer does"
                        );
                        registry.withdraw(gone.clone(), why.clone());
                        unavailable
                            .entry(name.clone())
                            .or_default()
                            .push((gone.clone(), why));
                    }
                    for tool in now {
                        let tool_name = crate::tool::Tool::name(&tool).to_owned();
                        if let Err(e) = registry.add_mcp(Arc::new(tool)) {
                            let why = format!("MCP server {name:?} offers it, but {e}");
                            registry.withdraw(tool_name.clone(), why.clone());
                            unavailable
                                .entry(name.clone())
                                .or_default()
                                .push((tool_name, why));
                        }
                    }
                }
                Err(why) => registry.withdraw(
                    crate::mcp::tool_prefix(name),
                    format!("MCP server {name:?} is not connected: {why}"),
                ),
            }
        }
        (registry, unavailable)
    }

    /// The record line of server `name`'s connect, once tried.
    pub fn record(
        &self,
        name: &str,
        run_id: &str,
        unavailable: &[(String, String)],
    ) -> Option<ConnectRecord> {
        let c = self.tried.get(name)?;
        let server = self.configured.get(name)?;
        let (outcome, failure) = match (&c.result, c.started) {
            (Ok(_), _) => (Outcome::Succeeded, None),
            (Err(e), true) => (Outcome::Failed, Some(e.clone())),
            (Err(e), false) => (Outcome::Blocked, Some(e.clone())),
        };
        let tools = match &c.result {
            Ok(conn) => ServerTool::all(conn)
                .iter()
                .map(|t| crate::tool::Tool::name(t).to_owned())
                .filter(|t| !unavailable.iter().any(|(u, _)| u == t))
                .collect(),
            Err(_) => Vec::new(),
        };
        Some(ConnectRecord {
            run_id: run_id.to_owned(),
            time_ms: c.time_ms,
            event: "mcp_connect",
            restart: c.restart,
            server: name.to_owned(),
            tool: connect_name(name),
            arguments: connect_arguments(server, self.connect_gate.roots().workspace()),
            admission: AdmissionRecord::of(&c.admission),
            approval: c.approval,
            outcome,
            failure,
            tools,
            unavailable: unavailable.to_vec(),
            not_enforced: c.result.as_ref().ok().and_then(|c| c.not_enforced.clone()),
        })
    }
}
