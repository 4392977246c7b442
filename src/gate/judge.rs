//! Stage 5, **policy**: YAML rules and Rego modules vote on the resolved call; any deny > any
//! ask > an allow that covers the whole call > the fallback, and what the analysis could not
//! vouch for is capped at ask ([`crate::policy`]). The policy input document is built here, from
//! what the earlier stages produced, never from the raw call.

use super::resolve::Resolved;
use crate::policy::input::{PolicyInput, SessionInfo, Target};
use crate::policy::rego::RegoInput;
use crate::policy::{CompiledPolicy, Facts, Ruling};
use crate::sandbox::TouchedPath;

/// A resolved call and the policy's ruling on it.
pub(super) struct Ruled {
    pub resolved: Resolved,
    pub ruling: Ruling,
    /// The policy input document, when Rego needs it or the gate explains.
    pub input: Option<PolicyInput>,
}

/// Lets the policy vote.
pub(super) fn judge(
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
    let input = (explain || policy.has_rego()).then(|| PolicyInput {
        tool: call.name.clone(),
        arguments: call.arguments.as_map().clone(),
        target: Target {
            tool: call.name.clone(),
            source: call.source,
            read_only: call.tool.read_only(),
            annotations: call.tool.annotations(),
            via: call.via.map(str::to_owned),
        },
        effects: class.effects.iter().copied().collect(),
        paths: touched.iter().map(TouchedPath::view).collect(),
        bash: class.bash.clone(),
        session: session.clone(),
    });
    // Converted once, straight into the values Rego evaluates; a document that does not
    // convert leaves Rego without input, and the policy denies.
    let rego_input = match (&input, policy.has_rego()) {
        (Some(input), true) => RegoInput::of(input).ok(),
        _ => None,
    };
    let ruling = policy.judge(&Facts {
        input: rego_input.as_ref(),
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
    });
    Ruled {
        resolved,
        ruling,
        input,
    }
}
