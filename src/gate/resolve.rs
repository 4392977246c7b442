//! Stage 5, **resolve**: each path the call touches is taken from the workspace, `~` expanded,
//! `..` and every symlink followed the way the kernel would, a shell glob expanded as bash
//! would, and the result placed in a root it may use — or the reason it may not. Each argument
//! that names a host ([`crate::tool::Tool::host_arguments`]: `network_connect`'s `host`, an
//! HTTP MCP server's `url`) is put in its one canonical spelling here, before anything judges
//! it: lowercase, no final dot, IDNA, every numeric IPv4 spelling as its dotted quad
//! ([`crate::egress::hosts::canonical_host`]). One that is no host makes the call invalid.

use super::classify::Classified;
use super::validate::{Invalid, Validated};
use crate::egress::hosts::{canonical_host, canonical_url};
use crate::sandbox::{Roots, TouchedPath};
use crate::tool::{Classification, HostArgument};

/// A classified call with every path resolved and placed.
pub(super) struct Resolved {
    pub call: Validated,
    pub class: Classification,
    pub touched: Vec<TouchedPath>,
}

/// Puts every host argument in its canonical spelling and resolves every path the
/// classification names.
pub(super) fn resolve(classified: Classified, roots: &Roots) -> Result<Resolved, Invalid> {
    let Classified { mut call, class } = classified;
    canonical_hosts(&mut call)?;
    let touched = roots.touch_all(&class.paths);
    Ok(Resolved {
        call,
        class,
        touched,
    })
}

/// The call's host arguments, each in its canonical spelling.
fn canonical_hosts(call: &mut Validated) -> Result<(), Invalid> {
    for (arg, kind) in call.tool.host_arguments() {
        let Some(value) = call.arguments.as_map().get(*arg) else {
            continue;
        };
        let invalid = |why: String| {
            Invalid::of(
                call.id.clone(),
                &call.name,
                format!("argument {arg:?} of {}: {why}", call.name),
            )
        };
        let Some(raw) = value.as_str() else {
            return Err(invalid("a host must be a string".into()));
        };
        let canonical = match kind {
            HostArgument::Host => canonical_host(raw),
            HostArgument::Url => canonical_url(raw),
        }
        .map_err(invalid)?;
        if canonical != raw {
            call.arguments
                .set(arg, serde_json::Value::String(canonical));
        }
    }
    Ok(())
}
