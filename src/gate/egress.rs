//! The gate as the judge of the egress proxy ([`crate::egress`]): each connection a bash call's
//! processes ask for is the call `network_connect {host, port}`, admitted by the very gate that
//! admitted the command — the same stages, rules, Rego modules and posture. An `ask` goes to the
//! session's approver when the gate has one ([`Gate::with_egress_asker`]); without, or under
//! the unattended posture (where the approve stage already turned it into `defaults.unattended`),
//! it is refused.

use std::sync::Arc;

use super::{Admission, Gate, Judgement};
use crate::egress::{CONNECT_TOOL, ConnectionJudge, Judged};

/// Answers an `ask` on a connection: `true` lets it through.
pub type EgressAsker = Arc<dyn Fn(&Admission) -> bool + Send + Sync>;

/// The judge for the admissions of `gate`.
pub(super) fn connection_judge(gate: &Gate) -> Arc<dyn ConnectionJudge> {
    Arc::new(GateJudge {
        gate: gate.with_registry_arc(Arc::clone(&gate.registry)),
    })
}

struct GateJudge {
    gate: Gate,
}

fn rules(admission: &Admission) -> Vec<String> {
    admission.decisive_rules().map(str::to_owned).collect()
}

impl ConnectionJudge for GateJudge {
    fn judge_connection(&self, host: &str, port: u16) -> Judged {
        let call = serde_json::json!({
            "id": format!("{CONNECT_TOOL}:{host}:{port}"),
            "name": CONNECT_TOOL,
            "arguments": {"host": host, "port": port},
        });
        match self.gate.admit_derived(&call.to_string()) {
            Judgement::Allowed(admitted) => {
                let a = admitted.admission();
                Judged {
                    verdict: a.verdict.as_str().to_owned(),
                    allowed: true,
                    reasons: a.reasons.clone(),
                    rules: rules(a),
                }
            }
            Judgement::Ask(pending) => {
                let a = pending.admission();
                let mut reasons = a.reasons.clone();
                let allowed = match &self.gate.asker {
                    Some(ask) => {
                        let yes = ask(a);
                        reasons.push(if yes {
                            "a person allowed it".into()
                        } else {
                            "a person refused it".into()
                        });
                        yes
                    }
                    None => {
                        reasons.push(
                            "it asks, and nobody can answer while the command runs here".into(),
                        );
                        false
                    }
                };
                Judged {
                    verdict: "ask".into(),
                    allowed,
                    reasons,
                    rules: rules(a),
                }
            }
            Judgement::Refused(a) => Judged {
                verdict: a.verdict.as_str().to_owned(),
                allowed: false,
                reasons: a.reasons.clone(),
                rules: rules(&a),
            },
        }
    }
}
