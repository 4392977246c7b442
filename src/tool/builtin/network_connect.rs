//! `network_connect {host, port}`: one TCP connection a jailed process asks the egress proxy
//! for ([`crate::egress`]), as a call the gate judges like any other — effect `network`, no
//! path. YAML rules match it by tool name and effect, Rego reads `input.arguments.host` and
//! `input.arguments.port`, and each `sandbox.network` entry is an allow for the hosts and port
//! it names (rule id `sandbox.network`).
//!
//! It is not offered to the model and never executes: the proxy asks the gate about it and
//! makes the connection itself. A model that proposes it gets a refusal that says so, and
//! `use_capability` cannot reach it.

use serde_json::{Value, json};

use super::object_schema;
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, HostArgument, Invocation, Output, Tool,
    ToolError,
};

pub(super) struct NetworkConnect;

impl Tool for NetworkConnect {
    fn name(&self) -> &str {
        crate::egress::CONNECT_TOOL
    }
    fn description(&self) -> &str {
        "A TCP connection a jailed process asks the egress proxy for; judged, never run by a model."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "host": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\s/@]+$", "description": "The host name or IP address, as the client named it."},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "The TCP port."},
            }),
            &["host", "port"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn host_arguments(&self) -> &'static [(&'static str, HostArgument)] {
        &[("host", HostArgument::Host)]
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(Classification::changes(&[Effect::Network], Vec::new()))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Err(ToolError::Refused(
            "network_connect is how the egress proxy asks about a connection a jailed process makes; it is not a tool to run, and nothing was connected (use bash with curl, git or a package manager)".into(),
        ))
    }
}
