//! MCP restarts: before an answer's calls are judged, each MCP server they name whose
//! connection died is restarted through the connect gate, and the session's gates are rebuilt
//! over the tools it lists now.

use std::sync::Arc;

use super::{Session, SessionError};
use crate::agent::provider::ProposedCall;
use crate::agent::servers::Servers;
use crate::call::{Call, RawArguments};
use crate::gate::Gate;

/// The MCP server a proposed call names: its tool's (`mcp__NAME__TOOL`), or the tool it reaches
/// through `use_capability` ([`crate::mcp::server_reached`], which `check` asks too).
pub(super) fn named_server(call: &ProposedCall) -> Option<String> {
    crate::mcp::server_reached(&Call {
        id: None,
        name: call.name.clone(),
        arguments: RawArguments::Text(call.arguments.clone()),
    })
}

impl Session {
    /// The MCP servers whose tools the session's gate offers, once connected: a server whose
    /// connection dies is restarted by the next call that names one of its tools (see the
    /// module doc), through `servers`' connect gate and this session's approver.
    pub fn servers(mut self, servers: Servers) -> Session {
        self.servers = Some(servers);
        self
    }

    /// Restarts each MCP server that one of `calls` names and whose connection died (see the
    /// module doc), records each restart's connect, and rebuilds the session's gates over the
    /// tools the servers offer now. Judging and starting block (a person may be asked; a
    /// process starts): they run on a blocking thread.
    pub(super) async fn restart_dead(
        &mut self,
        calls: &[ProposedCall],
    ) -> Result<(), SessionError> {
        let Some(servers) = &self.servers else {
            return Ok(());
        };
        let mut dead: Vec<String> = calls
            .iter()
            .filter_map(named_server)
            .filter(|name| servers.died(name).is_some())
            .collect();
        dead.sort();
        dead.dedup();
        if dead.is_empty() {
            return Ok(());
        }
        let Some(mut servers) = self.servers.take() else {
            return Ok(());
        };
        let approver = Arc::clone(&self.approver);
        let run_id = self.run_id.clone();
        let restarted = tokio::task::spawn_blocking(move || {
            let mut lines = Vec::new();
            for name in &dead {
                let answered =
                    servers.restart(name, &mut |admission| Some(approver.ask(admission).into()));
                match answered {
                    Ok(c) => {
                        tracing::warn!(
                            server = %name,
                            restart = c.restart.unwrap_or(0),
                            verdict = %c.admission.verdict,
                            started = c.result.is_ok(),
                            "MCP server restarted after it died"
                        );
                        let (_, unavailable) = servers.registry();
                        let none = Vec::new();
                        let listed = unavailable.get(name).unwrap_or(&none);
                        lines.extend(servers.record(name, &run_id, listed));
                    }
                    Err(why) => {
                        tracing::warn!(server = %name, "MCP server not restarted: {why}");
                    }
                }
            }
            (servers, lines)
        })
        .await;
        let (servers, lines) = restarted
            .map_err(|e| SessionError::Setup(format!("restarting an MCP server failed: {e}")))?;
        for line in &lines {
            self.recorder.append(line)?;
        }
        let (registry, _) = servers.registry();
        self.servers = Some(servers);
        let rebuilt = |gate: &Gate| {
            gate.with_registry(registry.clone())
                .map(Arc::new)
                .map_err(|e| {
                    SessionError::Setup(format!(
                        "cannot offer the restarted MCP server's tools: {e}"
                    ))
                })
        };
        self.gate = rebuilt(&self.gate)?;
        if let Some(planning) = &mut self.planning {
            planning.then = rebuilt(&planning.then)?;
        }
        Ok(())
    }
}
