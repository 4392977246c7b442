//! Stage 3, **classify**: the tool names the call's effects and every path it touches with its
//! role and access; a `bash` command is analysed with tree-sitter first. A call whose arguments
//! match the schema but make no sense (an edit that changes nothing) is still invalid here.

use super::validate::{Invalid, Validated};
use crate::tool::Classification;

/// A validated call and what it would do.
pub(super) struct Classified {
    pub call: Validated,
    pub class: Classification,
}

/// Asks the tool what the call does.
pub(super) fn classify(call: Validated) -> Result<Classified, Invalid> {
    match call.tool.classify(&call.arguments) {
        Ok(class) => Ok(Classified { call, class }),
        Err(e) => Err(Invalid::of(
            call.id.clone(),
            &call.name,
            format!("{}: {e}", call.name),
        )),
    }
}
