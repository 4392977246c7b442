//! Stage 2, **target**: a proxy is resolved first, then judged. A call of `use_capability
//! {capability, arguments}` becomes the call of the tool it names, with those arguments, before
//! validation: every later stage — its schema, its classification, its paths, the policy (where
//! `tool` is the target and `target.via` the proxy), the sandbox — sees only the target. A rule
//! naming only the proxy matches nothing, and the proxy's own read-only flag lends nothing.
//!
//! Refused here, as `invalid`: a proxy call whose own arguments are not `{capability: string,
//! arguments: object}`; a capability that is not a registered tool (the message lists what
//! exists); a capability that is the proxy itself, or a server's connect call.

use std::borrow::Cow;

use super::verdict::Invalid;
use crate::call::{Call, RawArguments};
use crate::tool::Registry;
use crate::tool::builtin::use_capability::NAME as PROXY;

/// A call with its proxy resolved.
pub(super) struct Targeted<'c> {
    /// The call of the tool that acts.
    pub call: Cow<'c, Call>,
    /// The proxy it went through.
    pub via: Option<&'static str>,
}

/// Resolves a `use_capability` call to the call it makes; any other call is its own target.
pub(super) fn target<'c>(registry: &Registry, call: &'c Call) -> Result<Targeted<'c>, Invalid> {
    if call.name != PROXY {
        return Ok(Targeted {
            call: Cow::Borrowed(call),
            via: None,
        });
    }
    let invalid = |message: String| Invalid::of(call.id.clone(), &call.name, message);
    let args = call
        .parse_arguments()
        .map_err(|e| invalid(format!("{e}")))?;
    let usage =
        "use_capability takes {\"capability\": TOOL NAME, \"arguments\": {...}} and nothing else";
    if args.keys().any(|k| k != "capability" && k != "arguments") {
        return Err(invalid(usage.into()));
    }
    let (Some(serde_json::Value::String(name)), Some(serde_json::Value::Object(inner))) =
        (args.get("capability"), args.get("arguments"))
    else {
        return Err(invalid(usage.into()));
    };
    if name == PROXY || name.starts_with("mcp_connect__") || name == crate::egress::CONNECT_TOOL {
        return Err(invalid(format!(
            "use_capability cannot reach {name:?}: it reaches the tools the model is offered, once"
        )));
    }
    if registry.get(name).is_none() && registry.withdrawn(name).is_none() {
        let known: Vec<&str> = registry.names().filter(|n| *n != PROXY).collect();
        return Err(invalid(format!(
            "use_capability: unknown capability {name:?}; the capabilities are: {}",
            known.join(", ")
        )));
    }
    Ok(Targeted {
        call: Cow::Owned(Call {
            id: call.id.clone(),
            name: name.clone(),
            arguments: RawArguments::Object(inner.clone()),
        }),
        via: Some(PROXY),
    })
}
