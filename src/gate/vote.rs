//! Stage 6, **policy**: YAML rules and Rego modules vote on the resolved call; any deny > any
//! ask > an allow that covers the whole call > the fallback, and what the analysis could not
//! vouch for is capped at ask ([`crate::policy`]). The policy input document is built here, from
//! what the earlier stages produced, never from the raw call: borrowed from them for Rego
//! ([`InputRef`], of which only what the modules read is converted), and copied into a
//! [`PolicyInput`] only when the gate explains.

use super::resolve::Resolved;
use crate::policy::input::{InputRef, PolicyInput, SessionInfo, Target};
use crate::policy::rego::RegoInput;
use crate::policy::{CompiledPolicy, Facts, Ruling};
use crate::sandbox::{PathView, TouchedPath};

/// A resolved call and the policy's ruling on it.
pub(super) struct Ruled {
    pub resolved: Resolved,
    pub ruling: Ruling,
    /// The policy input document, when the gate explains.
    pub input: Option<PolicyInput>,
    /// The touched paths as shown (the document's `paths`, and the admission's).
    pub paths: Vec<PathView>,
}

/// Lets the policy vote.
pub(super) fn vote(
    resolved: Resolved,
    policy: &CompiledPolicy,
    session: &SessionInfo,
    explain: bool,
) -> Ruled {
    let Resolved {
        call,
        class,
        touched,
    } = &resolved;
    let paths: Vec<PathView> = touched.iter().map(TouchedPath::view).collect();
    let rego = policy.rego();
    let narrowing = policy.narrowing_rego();
    let target = (explain || rego.is_some() || narrowing.is_some()).then(|| Target {
        tool: call.name.clone(),
        source: call.source,
        read_only: call.tool.read_only(),
        annotations: call.tool.annotations(),
        via: call.via.map(str::to_owned),
    });
    // The document borrows what the stages made; nothing is copied for Rego.
    let document = target.as_ref().map(|target| InputRef {
        tool: &call.name,
        arguments: call.arguments.as_map(),
        target,
        effects: &class.effects,
        paths: &paths,
        bash: class.bash.as_ref(),
        session,
    });
    // Converted once, straight into the values Rego evaluates, only the parts its modules
    // read; a document that does not convert leaves Rego without input, and the policy denies.
    let rego_input = match (&document, rego) {
        (Some(document), Some(rego)) => RegoInput::read_by(document, rego).ok(),
        _ => None,
    };
    let narrowing_input = match (&document, narrowing) {
        (Some(document), Some(rego)) => RegoInput::read_by(document, rego).ok(),
        _ => None,
    };
    let input = document.filter(|_| explain).map(InputRef::owned);
    let ruling = policy.ruling(&Facts {
        input: rego_input.as_ref(),
        narrowing_input: narrowing_input.as_ref(),
        tool: &call.name,
        effects: &class.effects,
        paths: touched,
        read_only: class.read_only,
        analysed: class.analysed,
        bash: class.bash.as_ref(),
        destination: (call.name == crate::egress::CONNECT_TOOL)
            .then(|| {
                let args = call.arguments.as_map();
                let host = args.get("host")?.as_str()?;
                let port = u16::try_from(args.get("port")?.as_u64()?).ok()?;
                Some((host, port))
            })
            .flatten(),
        environment: &class.environment,
    });
    Ruled {
        resolved,
        ruling,
        input,
        paths,
    }
}
